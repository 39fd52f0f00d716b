/*
 * remat/dataset.h — measured concentrations read from CSV, one file per
 * experiment, checked against a mechanism's species.
 *
 *   t,A,C            # header: the independent variable, then species by name
 *   0,1.0,0.0        # row 0: every measured species at the inlet / start
 *   0.5,0.61,        # empty cell: not measured at this point
 *   1.0,,0.12
 *
 *   remat_dataset *d;
 *   if (remat_dataset_read("run1.csv", mech, &d) != REMAT_OK) {
 *       fprintf(stderr, "%s\n", remat_last_error()); // run1.csv:3: column 'B': ...
 *       return 1;
 *   }
 *   for (size_t r = 0; r < remat_dataset_rows(d); r++)
 *       if (remat_dataset_is_measured(d, r, s))
 *           loss += sq(model(remat_dataset_times(d)[r], s) - remat_dataset_value(d, r, s));
 *   remat_dataset_free(d);
 *
 * Format: comma-separated, no quoting (a cell wrapped in one pair of double
 * quotes is unwrapped), spaces and tabs around a cell ignored, "\n" or "\r\n"
 * line ends, an optional UTF-8 byte-order mark, blank lines ignored. The
 * first row is the header. Its first column is the independent variable
 * (any name that is not a species; it need not match the mechanism's); the
 * others name species of the mechanism, each at most once, in any order and
 * any subset. Every data row has exactly as many cells as the header. The
 * first column must be filled and strictly increasing; any other cell is a
 * finite decimal number or empty (not measured). "nan" and "inf" are
 * rejected: a missing value is an empty cell.
 *
 * Standard deviations: a column named sigma_<species> (e.g. sigma_B, beside
 * a column B) gives the standard deviation of each measurement of that
 * species on its row; its cells are positive numbers or empty (no sigma
 * there). A species named sigma_B itself is read as that species.
 *
 * Conditions and initial values. Lines starting with '#' before the header
 * are comments; a comment of the form "# NAME = VALUE" (NAME an identifier,
 * VALUE a finite number) sets NAME for this experiment: a condition of the
 * mechanism (remat/mechanism.h "cond"; remat_dataset_cond), a gas
 * mechanism's pressure P (remat_dataset_pressure) or the initial
 * value of a species (remat_dataset_initial). Any other NAME is an error
 * naming path:line (a typo must not pass silently); comments without that
 * form are ignored. A '#' line after the header is an error naming path:line
 * (a setting there would be lost). A header column named after a condition gives it too:
 * its cells must all hold the same value (empty cells allowed), else an
 * error names path:line; it is never measured data. A condition set by
 * both a comment and a column must agree.
 *
 *   # T = 350
 *   # A = 1.0
 *   t,A,B
 *   0.5,0.61,0.39
 *
 * Ignition-delay tables (gas mechanisms, remat/gas.h; remat/fit.h
 * "Ignition delays"). A file whose first column is tau holds ignition
 * delays (s). With tau alone it is one experiment of one row, its T, P and
 * composition in comments (above). With more columns it is a table, one
 * experiment per row, each with its own conditions: a column after tau
 * names T (K), P (Pa), a declared condition, a species (its initial amount,
 * normalised with the others to mole fractions as '# H2 = 2' is) or
 * sigma_tau (the delay's standard deviation, > 0); any other name is an
 * error naming path:line. tau must be positive, the rows need not be
 * ordered, an empty cell leaves that value to the comments (which apply to
 * every row) or the fit's options. A name given by both a comment and a
 * column is an error (path:line of the column and the comment's line).
 *
 *   # P = 101325
 *   # N2 = 3.76
 *   tau,T,H2,O2,sigma_tau
 *   3.1e-4,1000,2,1,1e-6
 *   1.1e-4,1100,2,1,1e-6
 *
 * remat_dataset_read_all reads such a table into one dataset per row (rows
 * 1, times[0] the delay, remat_dataset_line(d, 0) its line, the row's
 * values as remat_dataset_cond/_pressure/_initial with the row's line as
 * remat_dataset_setting_line), and any other file into one dataset;
 * remat_dataset_read reads a table of one row, and refuses a longer one.
 *
 * Errors: REMAT_ERR_IO for a file that cannot be read (with the system's
 * reason), REMAT_ERR_PARSE otherwise, the message naming path:line and the
 * column.
 */
#ifndef REMAT_DATASET_H
#define REMAT_DATASET_H

#include "export.h"

#include <stddef.h>

#include "mechanism.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_dataset remat_dataset;

/* Reads one experiment. The dataset keeps no pointer to mech; its species
 * indices are mech's. */
REMAT_API remat_status remat_dataset_read(const char *path, const remat_mechanism *mech, remat_dataset **out);
REMAT_API void remat_dataset_free(remat_dataset *d); /* NULL is a no-op */
/* Every experiment of path: *n datasets into a new array *out (an
 * ignition-delay table: one per row; any other file: one, as
 * remat_dataset_read). Free with remat_dataset_free_all. */
REMAT_API remat_status remat_dataset_read_all(const char *path, const remat_mechanism *mech, remat_dataset ***out,
                                              int *n);
/* Frees all[0..n-1] and the array (n = 0: the array only, its datasets
 * kept by the caller). NULL is a no-op. */
REMAT_API void remat_dataset_free_all(remat_dataset **all, int n);

/* Every accessor below answers a NULL dataset with remat_last_error() set
 * (REMAT_ERR_NULL) and NULL, 0 or NaN (rows 0, is_measured 0). */
REMAT_API const char *remat_dataset_path(const remat_dataset *d);
/* The first column's header. */
REMAT_API const char *remat_dataset_indep_name(const remat_dataset *d);
REMAT_API size_t remat_dataset_rows(const remat_dataset *d);       /* >= 1 */
REMAT_API int remat_dataset_species_count(const remat_dataset *d); /* the mechanism's species count */
/* times[r], strictly increasing. */
REMAT_API const double *remat_dataset_times(const remat_dataset *d);
/* Row r: species_count values, NaN where not measured. Out-of-range r or s
 * aborts (a programmer error). */
REMAT_API const double *remat_dataset_row(const remat_dataset *d, size_t r);
REMAT_API double remat_dataset_value(const remat_dataset *d, size_t r, int s); /* NaN: not measured */
REMAT_API int remat_dataset_is_measured(const remat_dataset *d, size_t r, int s);
/* The standard deviation of the cell (row r, species s) from a sigma_<species>
 * column; NaN when the file gives none there. */
REMAT_API double remat_dataset_sigma(const remat_dataset *d, size_t r, int s);
/* Whether the file has a column for species s. */
REMAT_API int remat_dataset_has_column(const remat_dataset *d, int s);
/* Where a cell came from, for messages: the file line of row r (1-based,
 * blank lines and the header counted), and the 1-based column of species s
 * (sigma: of its sigma_<species> column); 0 when the file has no such column. */
REMAT_API int remat_dataset_line(const remat_dataset *d, size_t r);        /* NULL: 0 */
REMAT_API int remat_dataset_column(const remat_dataset *d, int s, int sigma); /* NULL: 0 */
/* Condition k of the mechanism as this file sets it ('# NAME = VALUE' or a
 * column); NaN when the file does not. */
REMAT_API double remat_dataset_cond(const remat_dataset *d, int k);
/* A gas mechanism's (remat/gas.h) pressure P in Pa as this file sets it
 * ('# P = 101325' or a column P, positive): P is a parameter of the
 * mechanism that a data file sets per experiment like a condition
 * (remat/fit.h "Conditions"); NaN when the file does not or the mechanism
 * is not a gas mechanism. */
REMAT_API double remat_dataset_pressure(const remat_dataset *d);
/* Species s's initial value from a '# NAME = VALUE' comment; NaN when none. */
REMAT_API double remat_dataset_initial(const remat_dataset *d, int s);
/* The file line that set condition k (species = 0) or the initial value of
 * species k (species = 1); 0 when none did. For a gas mechanism, condition
 * k = remat_mechanism_cond_count() is its pressure P. NULL: 0. */
REMAT_API int remat_dataset_setting_line(const remat_dataset *d, int k, int species);
/* An ignition delay's standard deviation (a delay table's sigma_tau cell);
 * NaN when none. */
REMAT_API double remat_dataset_delay_sigma(const remat_dataset *d);
/* Whether row 0 gives every species of the mechanism, so that the initial
 * state can be taken from it. */
REMAT_API int remat_dataset_initial_complete(const remat_dataset *d);

#ifdef __cplusplus
}
#endif
#endif
