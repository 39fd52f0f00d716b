/*
 * dataset.c — one experiment's measurements from CSV (format in
 * remat/dataset.h). The whole file is read first, then checked line by line;
 * nothing is kept unless every line is valid. NaN marks "not measured"
 * internally and is never accepted from the file.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/file.h"
#include "models/data/csv_text.h"
#include "remat/dataset.h"
#include "remat/gas.h"

struct remat_dataset {
    char *path;
    char *indep;
    size_t rows;
    int nspecies;
    double *times;             /* [rows] */
    double *values;            /* [rows][nspecies], NaN = not measured */
    unsigned char *has_column; /* [nspecies] */
    double *sigma;             /* [rows][nspecies] from sigma_<species> columns, NaN = none; NULL: no such column */
    int *lines;                /* [rows] the file line of each row */
    int *columns;              /* [2][nspecies] 1-based column of each species, then of its sigma; 0: none */
    int nconds;                /* the mechanism's conditions, then a gas mechanism's P (has_P) */
    int has_P;                 /* a gas mechanism (remat/gas.h): slot nconds - 1 is its pressure */
    double *conds;             /* [nconds] from '# NAME = VALUE' or a column named NAME; NaN: not given */
    double *init;              /* [nspecies] initial values from '# NAME = VALUE'; NaN: not given */
    int *set_line;             /* [nconds + nspecies] the line that set each (0: none) */
    double tau_sigma;          /* an ignition delay's sigma (a delay table's sigma_tau); NaN: none */
};

/* The condition slot a name sets: a declared condition, or a gas
 * mechanism's pressure P (remat/gas.h: a parameter of the mechanism, set
 * per experiment like a condition); -1: neither. */
static int cond_slot(const remat_dataset *d, const remat_mechanism *m, const char *name)
{
    int k = remat_mechanism_cond_find(m, name);
    return k >= 0 ? k : d->has_P && strcmp(name, "P") == 0 ? d->nconds - 1 : -1;
}

static const char *cond_slot_name(const remat_dataset *d, const remat_mechanism *m, int k)
{
    return d->has_P && k == d->nconds - 1 ? "P" : remat_mechanism_cond_name(m, k);
}

/* Cell i (0-based) of a line; cells are separated by ','. */
static span cell_at(span line, int i)
{
    const char *p = line.s, *end = line.s + line.len;
    for (; i > 0; i--) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        REMAT_ASSERT(comma);
        p = comma + 1;
    }
    const char *comma = memchr(p, ',', (size_t)(end - p));
    return csv_trim((span){p, (size_t)((comma ? comma : end) - p)});
}

static int count_cells(span line)
{
    int n = 1;
    for (size_t i = 0; i < line.len; i++)
        n += line.s[i] == ',';
    return n;
}

/* The species a column may name, "A, B, C" (cut short for long lists): a
 * gas mechanism's gas species only (its state's last entry, T, is listed
 * with the conditions) */
static void species_list(const remat_mechanism *mech, char *buf, size_t cap)
{
    size_t o = 0;
    int n = remat_gas_species_count(mech) ? remat_gas_species_count(mech) : remat_mechanism_species_count(mech);
    buf[0] = '\0';
    for (int i = 0; i < n && o + 1 < cap; i++) {
        if (o > 200) {
            snprintf(buf + o, cap - o, ", ...");
            return;
        }
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", remat_mechanism_species_name(mech, i));
    }
}

/* The conditions an experiment may set, by name ("T, P"; a gas mechanism's
 * initial T is its state's, which species_list leaves out), or "none". */
static void cond_list(const remat_dataset *d, const remat_mechanism *mech, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    if (remat_gas_species_count(mech))
        o += (size_t)snprintf(buf, cap, "T%s", d->nconds ? ", " : "");
    for (int k = 0; k < d->nconds && o + 1 < cap; k++) {
        if (o > 200) {
            snprintf(buf + o, cap - o, ", ...");
            return;
        }
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", cond_slot_name(d, mech, k));
    }
    if (!o)
        snprintf(buf, cap, "none");
}

typedef struct {
    const char *path;
    const remat_mechanism *mech;
    remat_dataset *d;
    int ncols;
    int *col_species; /* [ncols], -1 for column 0, -2 - s for the sigma column of species s */
    int *col_cond;    /* [ncols], the condition a column gives, else -1 */
    span *col_names;  /* [ncols] */
    size_t max_rows;
    /* an ignition-delay table (remat/dataset.h): one experiment per row */
    int table;
    int sigma_col;     /* its sigma_tau column (0: none) */
    double *row_conds; /* [max_rows][nconds] the rows' conditions, NaN: empty cell */
    double *row_sigma; /* [max_rows] the rows' sigma_tau, NaN: none */
} reader;

#define DELAY_COLUMN "tau"
#define DELAY_SIGMA_COLUMN "sigma_tau"

#define SIGMA_PREFIX "sigma_"

/* Every sigma_<species> column needs that species' column. */
static remat_status check_sigma_columns(reader *r, int lineno)
{
    char a[160];
    for (int j = 1; j < r->ncols; j++) {
        int s = r->col_species[j] <= -2 ? -2 - r->col_species[j] : -1;
        if (s >= 0 && !r->d->has_column[s])
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: sigma column %s but no column %s for its measurements",
                             r->path, lineno, csv_show(r->col_names[j], a, sizeof a),
                             remat_mechanism_species_name(r->mech, s));
    }
    return REMAT_OK;
}

/* An ignition-delay table's header (remat/dataset.h): tau, then columns
 * naming conditions (T, P, declared conds), species (initial amounts) and
 * sigma_tau; a name a comment already set is refused (which would win?). */
static remat_status parse_table_header(reader *r, span line, int lineno)
{
    char a[160], b[300];
    remat_dataset *d = r->d;
    r->table = 1;
    r->row_conds = rmi_malloc(r->max_rows * (size_t)(d->nconds ? d->nconds : 1) * sizeof *r->row_conds);
    r->row_sigma = rmi_malloc(r->max_rows * sizeof *r->row_sigma);
    if (!(d->indep = rmi_malloc(strlen(DELAY_COLUMN) + 1)) || !r->row_conds || !r->row_sigma)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", r->path);
    strcpy(d->indep, DELAY_COLUMN);
    r->col_species[0] = r->col_cond[0] = -1;
    r->col_names[0] = cell_at(line, 0);
    for (int j = 1; j < r->ncols; j++) {
        span c = r->col_names[j] = cell_at(line, j);
        if (c.len == 0)
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %d of the header has no name", r->path, lineno, j + 1);
        char name[128] = "";
        if (c.len < sizeof name)
            memcpy(name, c.s, c.len);
        int k = c.len < sizeof name ? cond_slot(d, r->mech, name) : -1;
        int s = k < 0 && c.len < sizeof name ? remat_mechanism_species_find(r->mech, name) : -1;
        int sig = k < 0 && s < 0 && !strcmp(name, DELAY_SIGMA_COLUMN);
        r->col_cond[j] = k;
        r->col_species[j] = s;
        if (sig) {
            if (r->sigma_col)
                return rmi_error(REMAT_ERR_PARSE, "%s:%d: duplicate column %s (columns %d and %d)", r->path, lineno,
                                 DELAY_SIGMA_COLUMN, r->sigma_col + 1, j + 1);
            r->sigma_col = j;
            continue;
        }
        if (k < 0 && s < 0) {
            species_list(r->mech, b, sizeof b);
            return rmi_error(REMAT_ERR_PARSE,
                             "%s:%d: unknown column %s (column %d) in an ignition-delay table: its columns after "
                             "tau name conditions (T, P%s), species (initial amounts: %s) or sigma_tau",
                             r->path, lineno, csv_show(c, a, sizeof a), j + 1,
                             remat_mechanism_cond_count(r->mech) ? ", the mechanism's 'cond's" : "", b);
        }
        for (int i = 1; i < j; i++)
            if ((k >= 0 && r->col_cond[i] == k) || (s >= 0 && r->col_species[i] == s))
                return rmi_error(REMAT_ERR_PARSE, "%s:%d: duplicate column %s (columns %d and %d)", r->path,
                                 lineno, csv_show(c, a, sizeof a), i + 1, j + 1);
        int slot = k >= 0 ? k : d->nconds + s;
        if (d->set_line[slot])
            return rmi_error(REMAT_ERR_PARSE,
                             "%s:%d: column %s: '%s' is also set by the comment at line %d: give it one way "
                             "(a column per row, or a comment for every row)",
                             r->path, lineno, csv_show(c, a, sizeof a), name, d->set_line[slot]);
    }
    return REMAT_OK;
}

/* A row of an ignition-delay table: its delay, conditions, initial amounts
 * (into values) and sigma; empty cells are not given (the comments', or the
 * fit's options, apply). */
static remat_status parse_table_row(reader *r, span line, int lineno)
{
    char a[160], b[160];
    remat_dataset *d = r->d;
    int ncells = count_cells(line);
    if (ncells != r->ncols)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: %d cells, the header has %d columns", r->path, lineno, ncells,
                         r->ncols);
    size_t row = d->rows;
    double *vals = d->values + row * (size_t)d->nspecies, *conds = r->row_conds + row * (size_t)d->nconds;
    for (int s = 0; s < d->nspecies; s++)
        vals[s] = NAN;
    for (int k = 0; k < d->nconds; k++)
        conds[k] = NAN;
    r->row_sigma[row] = NAN;
    int K = remat_gas_species_count(r->mech);
    for (int j = 0; j < r->ncols; j++) {
        span c = cell_at(line, j);
        const char *col = csv_show(r->col_names[j], b, sizeof b);
        double v = 0;
        if (c.len == 0) {
            if (j == 0)
                return rmi_error(REMAT_ERR_PARSE, "%s:%d: column tau: empty cell (every row of an ignition-delay "
                                 "table is one delay)", r->path, lineno);
            continue;
        }
        int num = csv_number(c, &v);
        if (num != NUM_OK)
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: %s is not a finite number%s", r->path, lineno, col,
                             csv_show(c, a, sizeof a), num == NUM_NONFINITE ? " (leave the cell empty for a value "
                                                                              "not given)" : "");
        int s = r->col_species[j], k = r->col_cond[j];
        if (j == 0 && !(v > 0))
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column tau: the ignition delay %g s must be positive", r->path,
                             lineno, v);
        if (j == r->sigma_col && !(v > 0))
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: %s is not a positive standard deviation", r->path,
                             lineno, col, csv_show(c, a, sizeof a));
        if (d->has_P && k == d->nconds - 1 && !(v > 0))
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: the pressure P is %g: it must be positive (Pa)",
                             r->path, lineno, col, v);
        if (s == K && !(v > 0))
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: the initial temperature is %g: it must be "
                             "positive (K)", r->path, lineno, col, v);
        if (s >= 0 && v < 0)
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: the initial amount of species '%s' is %g: an "
                             "amount is >= 0", r->path, lineno, col, remat_mechanism_species_name(r->mech, s), v);
        if (j == 0)
            d->times[row] = v;
        else if (j == r->sigma_col)
            r->row_sigma[row] = v;
        else if (k >= 0)
            conds[k] = v;
        else
            vals[s] = v;
    }
    d->lines[row] = lineno;
    d->rows++;
    return REMAT_OK;
}

static remat_status parse_header(reader *r, span line, int lineno)
{
    char a[160], b[300];
    const char *sep = csv_other_separator(line);
    if (sep)
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:%d: the header has %ss and no commas: a %s-separated file? (this reader takes "
                         "comma-separated values)",
                         r->path, lineno, sep, sep);
    r->ncols = count_cells(line);
    r->col_species = rmi_malloc((size_t)r->ncols * sizeof *r->col_species);
    r->col_cond = rmi_malloc((size_t)r->ncols * sizeof *r->col_cond);
    r->col_names = rmi_malloc((size_t)r->ncols * sizeof *r->col_names);
    if (!r->col_species || !r->col_cond || !r->col_names)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", r->path);
    span first = cell_at(line, 0);
    if (r->d->has_P && r->ncols > 1 && first.len == strlen(DELAY_COLUMN) && !memcmp(first.s, DELAY_COLUMN, first.len))
        return parse_table_header(r, line, lineno);
    for (int j = 0; j < r->ncols; j++) {
        span c = r->col_names[j] = cell_at(line, j);
        if (c.len == 0)
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %d of the header has no name", r->path,
                             lineno, j + 1);
        char name[128] = "";
        if (c.len < sizeof name)
            memcpy(name, c.s, c.len);
        int s = c.len < sizeof name ? remat_mechanism_species_find(r->mech, name) : -1, sig = 0;
        if (j > 0 && s < 0 && !strncmp(name, SIGMA_PREFIX, strlen(SIGMA_PREFIX))) {
            s = remat_mechanism_species_find(r->mech, name + strlen(SIGMA_PREFIX));
            sig = s >= 0;
        }
        r->col_species[j] = j ? (sig ? -2 - s : s) : -1;
        r->col_cond[j] = j > 0 && s < 0 && c.len < sizeof name ? cond_slot(r->d, r->mech, name) : -1;
        if (r->col_cond[j] >= 0) {
            for (int k = 1; k < j; k++)
                if (r->col_cond[k] == r->col_cond[j])
                    return rmi_error(REMAT_ERR_PARSE, "%s:%d: duplicate column %s (columns %d and %d)",
                                     r->path, lineno, csv_show(c, a, sizeof a), k + 1, j + 1);
            r->col_species[j] = -1;
            continue;
        }
        if (j > 0 && s >= 0)
            r->d->columns[(sig ? (size_t)r->d->nspecies : 0) + (size_t)s] = j + 1;
        if (j == 0) {
            if (s >= 0)
                return rmi_error(REMAT_ERR_PARSE,
                                 "%s:%d: column 1 is species %s; the first column must be the "
                                 "independent variable",
                                 r->path, lineno, csv_show(c, a, sizeof a));
            if (!(r->d->indep = rmi_malloc(c.len + 1)))
                return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", r->path);
            memcpy(r->d->indep, c.s, c.len);
            r->d->indep[c.len] = '\0';
            continue;
        }
        if (s < 0) {
            species_list(r->mech, b, sizeof b);
            return rmi_error(REMAT_ERR_PARSE,
                             "%s:%d: unknown species column %s (column %d; the mechanism's species "
                             "are %s%s)",
                             r->path, lineno, csv_show(c, a, sizeof a), j + 1, b,
                             remat_mechanism_cond_count(r->mech) ? "; a column may also name a condition" : "");
        }
        for (int k = 1; k < j; k++)
            if (r->col_species[k] == r->col_species[j])
                return rmi_error(REMAT_ERR_PARSE, "%s:%d: duplicate column %s (columns %d and %d)",
                                 r->path, lineno, csv_show(c, a, sizeof a), k + 1, j + 1);
        if (sig) {
            if (!r->d->sigma && !(r->d->sigma = rmi_malloc(r->max_rows * (size_t)r->d->nspecies * sizeof *r->d->sigma)))
                return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", r->path);
        } else {
            r->d->has_column[s] = 1;
        }
    }
    return check_sigma_columns(r, lineno);
}

static remat_status parse_row(reader *r, span line, int lineno)
{
    char a[160], b[160];
    remat_dataset *d = r->d;
    int ncells = count_cells(line);
    if (ncells > r->ncols)
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:%d: too many cells: %d, the header has %d columns (extra cell %s after "
                         "column %s)",
                         r->path, lineno, ncells, r->ncols, csv_show(cell_at(line, r->ncols), a, sizeof a),
                         csv_show(r->col_names[r->ncols - 1], b, sizeof b));
    if (ncells < r->ncols)
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:%d: too few cells: %d, the header has %d columns (no cell for column %s)",
                         r->path, lineno, ncells, r->ncols, csv_show(r->col_names[ncells], b, sizeof b));
    size_t row = d->rows;
    double *vals = d->values + row * (size_t)d->nspecies;
    double *sig = d->sigma ? d->sigma + row * (size_t)d->nspecies : NULL;
    for (int s = 0; s < d->nspecies; s++) {
        vals[s] = NAN;
        if (sig)
            sig[s] = NAN;
    }
    for (int j = 0; j < r->ncols; j++) {
        span c = cell_at(line, j);
        const char *col = csv_show(r->col_names[j], b, sizeof b);
        double v = 0;
        if (c.len == 0) {
            if (j == 0)
                return rmi_error(REMAT_ERR_PARSE,
                                 "%s:%d: column %s: empty cell (the independent variable is "
                                 "required on every row)",
                                 r->path, lineno, col);
            continue;
        }
        switch (csv_number(c, &v)) {
        case NUM_OK: break;
        case NUM_EMPTY: /* handled above */
        case NUM_NONFINITE:
            return rmi_error(REMAT_ERR_PARSE,
                             "%s:%d: column %s: %s is not a finite number (leave the cell empty "
                             "for a missing value)",
                             r->path, lineno, col, csv_show(c, a, sizeof a));
        case NUM_RANGE:
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: %s is out of range", r->path,
                             lineno, col, csv_show(c, a, sizeof a));
        case NUM_BAD:
            return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: cannot read %s as a number",
                             r->path, lineno, col, csv_show(c, a, sizeof a));
        }
        if (j == 0) {
            if (row > 0 && !(v > d->times[row - 1]))
                return rmi_error(REMAT_ERR_PARSE,
                                 "%s:%d: column %s: %.17g is not greater than %.17g on the previous "
                                 "row (the first column must increase strictly)",
                                 r->path, lineno, col, v, d->times[row - 1]);
            d->times[row] = v;
        } else if (r->col_cond[j] >= 0) {
            int k = r->col_cond[j];
            double *have = &d->conds[k];
            if (d->has_P && k == d->nconds - 1 && !(v > 0))
                return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: the pressure P is %g: it must be positive (Pa)",
                                 r->path, lineno, col, v);
            if (!isnan(*have) && *have != v)
                return rmi_error(REMAT_ERR_PARSE,
                                 "%s:%d: column %s: condition '%s' is %.17g here but %.17g at line %d: a "
                                 "condition is constant within one experiment (one file per value)",
                                 r->path, lineno, col, cond_slot_name(d, r->mech, k), v, *have,
                                 d->set_line[k]);
            if (isnan(*have)) {
                *have = v;
                d->set_line[k] = lineno;
            }
        } else if (r->col_species[j] <= -2) {
            if (!(v > 0))
                return rmi_error(REMAT_ERR_PARSE, "%s:%d: column %s: %s is not a positive standard deviation",
                                 r->path, lineno, col, csv_show(c, a, sizeof a));
            sig[-2 - r->col_species[j]] = v;
        } else {
            vals[r->col_species[j]] = v;
        }
    }
    d->lines[row] = lineno;
    d->rows++;
    return REMAT_OK;
}

/* A line '# NAME = VALUE' before the header: NAME's value for this
 * experiment (remat/dataset.h). What a name may be is decided here only. */
static remat_status parse_setting(reader *r, span line, int lineno)
{
    char a[160], b[300];
    remat_dataset *d = r->d;
    span t = csv_trim((span){line.s + 1, line.len - 1}); /* after '#' */
    const char *eq = memchr(t.s, '=', t.len);
    if (!eq)
        return REMAT_OK; /* a plain comment */
    span name = csv_trim((span){t.s, (size_t)(eq - t.s)});
    span val = csv_trim((span){eq + 1, (size_t)(t.s + t.len - eq - 1)});
    int ident = name.len > 0 && name.len < 128 && (isalpha((unsigned char)name.s[0]) || name.s[0] == '_');
    for (size_t i = 0; ident && i < name.len; i++)
        ident = isalnum((unsigned char)name.s[i]) || name.s[i] == '_';
    if (!ident)
        return REMAT_OK; /* prose with an '=' in it */
    char nm[128];
    memcpy(nm, name.s, name.len);
    nm[name.len] = '\0';
    int k = cond_slot(d, r->mech, nm), sp = k < 0 ? remat_mechanism_species_find(r->mech, nm) : -1;
    if (k < 0 && sp < 0) {
        char cn[300];
        species_list(r->mech, b, sizeof b);
        cond_list(d, r->mech, cn, sizeof cn);
        const char *what = remat_mechanism_param_find(r->mech, nm) >= 0 ? " (it is a parameter: a data file sets "
                                                                           "conditions and initial values)"
                                                                         : "";
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:%d: '# %s = ...' names neither a condition nor a species of the mechanism%s "
                         "(its conditions: %s; its species: %s)",
                         r->path, lineno, nm, what, cn, b);
    }
    double v = 0;
    if (csv_number(val, &v) != NUM_OK)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: '# %s = ...': cannot read %s as a finite number", r->path,
                         lineno, nm, csv_show(val, a, sizeof a));
    int slot = k >= 0 ? k : d->nconds + sp;
    if (d->set_line[slot])
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: '%s' set twice (first at line %d)", r->path, lineno, nm,
                         d->set_line[slot]);
    if (d->has_P && k == d->nconds - 1 && !(v > 0))
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: the pressure P is %g: it must be positive (Pa)", r->path,
                         lineno, v);
    if (sp >= 0 && v < 0)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: the initial value of species '%s' is %g: a concentration is "
                         ">= 0", r->path, lineno, nm, v);
    d->set_line[slot] = lineno;
    if (k >= 0)
        d->conds[k] = v;
    else
        d->init[sp] = v;
    return REMAT_OK;
}

static remat_status parse_csv(reader *r, const char *text, size_t n)
{
    remat_dataset *d = r->d;
    remat_status st = csv_check_text(r->path, text, n, 0);
    if (st != REMAT_OK)
        return st;
    csv_skip_bom(&text, &n);
    size_t max_rows = r->max_rows = csv_count_lines(text, n);
    if (d->nspecies > 0 && max_rows > SIZE_MAX / sizeof(double) / (size_t)d->nspecies)
        return rmi_error(REMAT_ERR_NOMEM, "%s: too many rows", r->path);
    d->times = rmi_malloc(max_rows * sizeof *d->times);
    d->values = rmi_malloc(max_rows * (size_t)(d->nspecies ? d->nspecies : 1) * sizeof *d->values);
    d->lines = rmi_malloc(max_rows * sizeof *d->lines);
    if (!d->times || !d->values || !d->lines)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for %zu rows", r->path, max_rows);
    int lineno = 0, header_line = 0;
    span line;
    for (const char *p = text; csv_next_line(&p, text + n, &lineno, &line);) {
        span lead = csv_trim(line);
        if (!header_line && lead.len && lead.s[0] == '#') {
            if ((st = parse_setting(r, lead, lineno)) != REMAT_OK)
                return st;
            continue;
        }
        if (header_line && lead.len && lead.s[0] == '#') /* it read as a row of one bad cell */
            return rmi_error(REMAT_ERR_PARSE,
                             "%s:%d: a comment line after the header row (line %d): comments, and the '# NAME = "
                             "VALUE' settings among them, go before the header",
                             r->path, lineno, header_line);
        st = header_line ? (r->table ? parse_table_row : parse_row)(r, line, lineno) : parse_header(r, line, lineno);
        if (st != REMAT_OK)
            return st;
        if (!header_line)
            header_line = lineno;
    }
    if (!header_line)
        return rmi_error(REMAT_ERR_PARSE, "%s:1: empty file (expected a header row)", r->path);
    if (d->rows == 0)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: header only, no data rows", r->path, header_line);
    return REMAT_OK;
}

/* An empty dataset of path for mech: nothing given; NULL when out of memory. */
static remat_dataset *dataset_new(const char *path, const remat_mechanism *mech)
{
    remat_dataset *d = rmi_calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->nspecies = remat_mechanism_species_count(mech);
    d->path = rmi_malloc(strlen(path) + 1);
    d->has_column = rmi_calloc((size_t)(d->nspecies ? d->nspecies : 1), 1);
    d->columns = rmi_calloc(2 * (size_t)(d->nspecies ? d->nspecies : 1), sizeof *d->columns);
    d->has_P = remat_gas_species_count(mech) > 0;
    d->nconds = remat_mechanism_cond_count(mech) + d->has_P;
    d->conds = rmi_malloc((size_t)(d->nconds + 1) * sizeof *d->conds);
    d->init = rmi_malloc((size_t)(d->nspecies + 1) * sizeof *d->init);
    d->set_line = rmi_calloc((size_t)(d->nconds + d->nspecies + 1), sizeof *d->set_line);
    if (!d->path || !d->has_column || !d->columns || !d->conds || !d->init || !d->set_line) {
        remat_dataset_free(d);
        return NULL;
    }
    strcpy(d->path, path);
    for (int k = 0; k < d->nconds; k++)
        d->conds[k] = NAN;
    for (int k = 0; k < d->nspecies; k++)
        d->init[k] = NAN;
    d->tau_sigma = NAN;
    return d;
}

/* The whole file into *out (a delay table: one dataset of its rows, the
 * table's columns left in r for split_row). r's arrays are the caller's to
 * free (reader_free). */
static remat_status read_file(const char *path, const remat_mechanism *mech, reader *r, remat_dataset **out)
{
    char *text = NULL;
    size_t n = 0;
    *r = (reader){.path = path, .mech = mech};
    remat_status st = rmi_read_file(path, "data file", &text, &n);
    if (st != REMAT_OK)
        return st;
    remat_dataset *d = r->d = dataset_new(path, mech);
    st = d ? parse_csv(r, text, n) : rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", path);
    rmi_free(text);
    if (st != REMAT_OK) {
        remat_dataset_free(d);
        return st;
    }
    *out = d;
    return REMAT_OK;
}

static void reader_free(reader *r)
{
    rmi_free(r->col_species);
    rmi_free(r->col_cond);
    rmi_free(r->col_names);
    rmi_free(r->row_conds);
    rmi_free(r->row_sigma);
}

/* Row i of the delay table t (read by r) as its own one-row experiment: the
 * file's comments, then the row's cells (which the header checked are
 * not both given). */
static remat_status split_row(const reader *r, const remat_dataset *t, size_t i, remat_dataset **out)
{
    remat_dataset *d = dataset_new(t->path, r->mech);
    int S = t->nspecies, C = t->nconds;
    if (d) {
        d->indep = rmi_malloc(strlen(t->indep) + 1);
        d->times = rmi_malloc(sizeof *d->times);
        d->values = rmi_malloc((size_t)(S ? S : 1) * sizeof *d->values);
        d->lines = rmi_malloc(sizeof *d->lines);
    }
    if (!d || !d->indep || !d->times || !d->values || !d->lines) {
        remat_dataset_free(d);
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", t->path);
    }
    strcpy(d->indep, t->indep);
    d->rows = 1;
    d->times[0] = t->times[i];
    d->lines[0] = t->lines[i];
    d->tau_sigma = r->row_sigma[i];
    for (int s = 0; s < S; s++) {
        double v = t->values[i * (size_t)S + (size_t)s];
        d->values[s] = NAN; /* a delay measures no species */
        d->init[s] = isnan(v) ? t->init[s] : v;
        d->set_line[C + s] = isnan(v) ? t->set_line[C + s] : t->lines[i];
    }
    for (int k = 0; k < C; k++) {
        double v = r->row_conds[i * (size_t)C + (size_t)k];
        d->conds[k] = isnan(v) ? t->conds[k] : v;
        d->set_line[k] = isnan(v) ? t->set_line[k] : t->lines[i];
    }
    *out = d;
    return REMAT_OK;
}

remat_status remat_dataset_read(const char *path, const remat_mechanism *mech, remat_dataset **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_dataset_read: out is NULL");
    *out = NULL;
    if (!path || !mech)
        return rmi_error(REMAT_ERR_NULL, "remat_dataset_read: %s is NULL", !path ? "path" : "mech");
    reader r;
    remat_dataset *d = NULL;
    remat_status st = read_file(path, mech, &r, &d);
    if (st == REMAT_OK && r.table) {
        if (d->rows == 1)
            st = split_row(&r, d, 0, out);
        else
            st = rmi_error(REMAT_ERR_PARSE,
                           "%s:%d: an ignition-delay table of %zu experiments (one per row): read it with "
                           "remat_dataset_read_all",
                           path, d->lines[1], d->rows);
        remat_dataset_free(d);
        d = NULL;
    } else if (st == REMAT_OK) {
        *out = d;
    }
    reader_free(&r);
    return st;
}

remat_status remat_dataset_read_all(const char *path, const remat_mechanism *mech, remat_dataset ***out, int *n)
{
    if (!out || !n)
        return rmi_error(REMAT_ERR_NULL, "remat_dataset_read_all: %s is NULL", !out ? "out" : "n");
    *out = NULL;
    *n = 0;
    if (!path || !mech)
        return rmi_error(REMAT_ERR_NULL, "remat_dataset_read_all: %s is NULL", !path ? "path" : "mech");
    reader r;
    remat_dataset *d = NULL;
    remat_status st = read_file(path, mech, &r, &d);
    if (st != REMAT_OK) {
        reader_free(&r);
        return st;
    }
    size_t count = r.table ? d->rows : 1;
    remat_dataset **all = count <= INT32_MAX ? rmi_calloc(count, sizeof *all) : NULL;
    if (!all)
        st = rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for %zu experiments", path, count);
    else if (!r.table)
        all[0] = d, d = NULL;
    for (size_t i = 0; st == REMAT_OK && r.table && i < count; i++)
        st = split_row(&r, d, i, &all[i]);
    remat_dataset_free(d);
    reader_free(&r);
    if (st != REMAT_OK) {
        for (size_t i = 0; all && i < count; i++)
            remat_dataset_free(all[i]);
        rmi_free(all);
        return st;
    }
    *out = all;
    *n = (int)count;
    return REMAT_OK;
}

void remat_dataset_free_all(remat_dataset **all, int n)
{
    for (int i = 0; all && i < n; i++)
        remat_dataset_free(all[i]);
    rmi_free(all);
}

void remat_dataset_free(remat_dataset *d)
{
    if (!d)
        return;
    rmi_free(d->path);
    rmi_free(d->indep);
    rmi_free(d->times);
    rmi_free(d->values);
    rmi_free(d->lines);
    rmi_free(d->columns);
    rmi_free(d->has_column);
    rmi_free(d->sigma);
    rmi_free(d->conds);
    rmi_free(d->init);
    rmi_free(d->set_line);
    rmi_free(d);
}

/* A NULL dataset: the accessor returns its documented value and this sets
 * remat_last_error() naming it; 1 when d is NULL. */
static int null_data(const remat_dataset *d, const char *fn)
{
    if (d)
        return 0;
    rmi_error(REMAT_ERR_NULL, "%s: dataset is NULL", fn);
    return 1;
}
#define NULL_DATA(d, value)                                                                                     \
    do {                                                                                                      \
        if (null_data((d), __func__))                                                                         \
            return value;                                                                                     \
    } while (0)

const char *remat_dataset_path(const remat_dataset *d)
{
    NULL_DATA(d, NULL);
    return d->path;
}

const char *remat_dataset_indep_name(const remat_dataset *d)
{
    NULL_DATA(d, NULL);
    return d->indep;
}

size_t remat_dataset_rows(const remat_dataset *d)
{
    NULL_DATA(d, 0);
    return d->rows;
}

int remat_dataset_species_count(const remat_dataset *d)
{
    NULL_DATA(d, 0);
    return d->nspecies;
}

const double *remat_dataset_times(const remat_dataset *d)
{
    NULL_DATA(d, NULL);
    return d->times;
}

const double *remat_dataset_row(const remat_dataset *d, size_t r)
{
    NULL_DATA(d, NULL);
    REMAT_ASSERT(r < d->rows);
    return d->values + r * (size_t)d->nspecies;
}

double remat_dataset_value(const remat_dataset *d, size_t r, int s)
{
    NULL_DATA(d, NAN);
    REMAT_ASSERT(s >= 0 && s < d->nspecies);
    return remat_dataset_row(d, r)[s];
}

int remat_dataset_is_measured(const remat_dataset *d, size_t r, int s)
{
    NULL_DATA(d, 0);
    return !isnan(remat_dataset_value(d, r, s));
}

double remat_dataset_sigma(const remat_dataset *d, size_t r, int s)
{
    NULL_DATA(d, NAN);
    REMAT_ASSERT(r < d->rows && s >= 0 && s < d->nspecies);
    return d->sigma ? d->sigma[r * (size_t)d->nspecies + (size_t)s] : NAN;
}

int remat_dataset_has_column(const remat_dataset *d, int s)
{
    NULL_DATA(d, 0);
    REMAT_ASSERT(s >= 0 && s < d->nspecies);
    return d->has_column[s];
}

int remat_dataset_line(const remat_dataset *d, size_t r)
{
    NULL_DATA(d, 0);
    REMAT_ASSERT(r < d->rows);
    return d->lines[r];
}

int remat_dataset_column(const remat_dataset *d, int s, int sigma)
{
    NULL_DATA(d, 0);
    REMAT_ASSERT(s >= 0 && s < d->nspecies);
    return d->columns[(sigma ? (size_t)d->nspecies : 0) + (size_t)s];
}

int remat_dataset_initial_complete(const remat_dataset *d)
{
    NULL_DATA(d, 0);
    for (int s = 0; s < d->nspecies; s++)
        if (!remat_dataset_is_measured(d, 0, s))
            return 0;
    return 1;
}

double remat_dataset_cond(const remat_dataset *d, int k)
{
    NULL_DATA(d, NAN);
    REMAT_ASSERT(k >= 0 && k < d->nconds - d->has_P);
    return d->conds[k];
}

double remat_dataset_pressure(const remat_dataset *d)
{
    NULL_DATA(d, NAN);
    return d->has_P ? d->conds[d->nconds - 1] : NAN;
}

double remat_dataset_initial(const remat_dataset *d, int s)
{
    NULL_DATA(d, NAN);
    REMAT_ASSERT(s >= 0 && s < d->nspecies);
    return d->init[s];
}

int remat_dataset_setting_line(const remat_dataset *d, int k, int species)
{
    NULL_DATA(d, 0);
    REMAT_ASSERT(k >= 0 && k < (species ? d->nspecies : d->nconds));
    return d->set_line[(species ? d->nconds : 0) + k];
}

double remat_dataset_delay_sigma(const remat_dataset *d)
{
    NULL_DATA(d, NAN);
    return d->tau_sigma;
}
