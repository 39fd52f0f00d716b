/*
 * labeled.c — a labelled table from CSV (format in remat/nn_data.h), its
 * accessors and feature scaling. The whole file is read, checked for the
 * encodings and separators a spreadsheet might have used, then parsed line
 * by line into a table sized from the line count; nothing is returned unless
 * every line is valid.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "csv_text.h"
#include "labeled_impl.h"

/* ---- the table ---- */

void remat_labeled_free(remat_labeled *t)
{
    if (!t)
        return;
    rmi_free(t->x);
    rmi_free(t->y);
    rmi_free(t->origin);
    rmi_free(t->names);
    rmi_free(t->name);
    rmi_free(t);
}

/* t->x, y, origin for n rows (at least one element each, so malloc(0) never
 * decides success) */
static int alloc_rows(remat_labeled *t, int64_t n)
{
    size_t rows = (size_t)(n ? n : 1), d = (size_t)(t->d ? t->d : 1);
    if (rows > SIZE_MAX / sizeof(float) / d)
        return 0;
    t->x = rmi_malloc(rows * d * sizeof *t->x);
    t->y = rmi_malloc(rows * sizeof *t->y);
    t->origin = rmi_malloc(rows * sizeof *t->origin);
    return t->x && t->y && t->origin;
}

/* names: d + 1 strings back to back in a block of `bytes` */
static int set_names(remat_labeled *t, const char *names, size_t bytes)
{
    t->names = rmi_malloc(bytes);
    t->name = rmi_malloc(sizeof *t->name * (size_t)(t->d + 1));
    if (!t->names || !t->name)
        return 0;
    memcpy(t->names, names, bytes);
    char *p = t->names;
    for (int64_t j = 0; j <= t->d; j++) {
        t->name[j] = p;
        p += strlen(p) + 1;
    }
    return 1;
}

remat_labeled *rmi_labeled_alloc_like(const remat_labeled *src, int64_t n)
{
    remat_labeled *t = rmi_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->n = n;
    t->d = src->d;
    t->n_classes = src->n_classes;
    const char *last = src->name[src->d];
    if (!alloc_rows(t, n) || !set_names(t, src->names, (size_t)(last - src->names) + strlen(last) + 1)) {
        remat_labeled_free(t);
        return NULL;
    }
    return t;
}

int64_t remat_labeled_rows(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, 0);
    return t->n;
}

int64_t remat_labeled_features(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, 0);
    return t->d;
}

int32_t remat_labeled_classes(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, 0);
    return t->n_classes;
}

const float *remat_labeled_x(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, NULL);
    return t->x;
}

const int32_t *remat_labeled_y(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, NULL);
    return t->y;
}

const int64_t *remat_labeled_origin(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, NULL);
    return t->origin;
}

const char *remat_labeled_label_name(const remat_labeled *t)
{
    REMAT_NULL_RETURN(t, NULL);
    return t->name[t->d];
}


const char *remat_labeled_feature_name(const remat_labeled *t, int64_t i)
{
    REMAT_NULL_RETURN(t, NULL);
    return i >= 0 && i < t->d ? t->name[i] : NULL;
}

/* ---- scaling ---- */

remat_status remat_labeled_scale(remat_labeled *t, double s)
{
    if (!t)
        return rmi_error(REMAT_ERR_NULL, "labeled scale: the table is NULL");
    if (!(isfinite(s) && s != 0))
        return rmi_error(REMAT_ERR_VALUE, "labeled scale: factor %g must be finite and nonzero", s);
    size_t n = (size_t)t->n * (size_t)t->d;
    /* checked first: a rejected scale leaves the table as it was */
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)t->x[i] * s) <= FLT_MAX))
            return rmi_error(REMAT_ERR_NUMERIC,
                             "labeled scale: row %zu, feature '%s': %g * %g overflows a float (nothing "
                             "was scaled)",
                             i / (size_t)t->d, t->name[i % (size_t)t->d], (double)t->x[i], s);
    for (size_t i = 0; i < n; i++)
        t->x[i] = (float)((double)t->x[i] * s);
    return REMAT_OK;
}

remat_status remat_labeled_standardize(remat_labeled *t, const remat_labeled *ref, double *mean, double *sd)
{
    if (!t || !ref)
        return rmi_error(REMAT_ERR_NULL, "labeled standardize: %s is NULL", !t ? "the table" : "ref");
    if (ref->d != t->d)
        return rmi_error(REMAT_ERR_SHAPE, "labeled standardize: ref has %lld features, the table %lld",
                         (long long)ref->d, (long long)t->d);
    if (ref->n == 0)
        return rmi_error(REMAT_ERR_VALUE, "labeled standardize: ref has no rows");
    for (int64_t j = 0; j < t->d; j++) {
        /* two passes (mean, then squared deviations): no cancellation */
        double m = 0, ss = 0;
        for (int64_t r = 0; r < ref->n; r++)
            m += ref->x[r * ref->d + j];
        m /= (double)ref->n;
        for (int64_t r = 0; r < ref->n; r++) {
            double dv = ref->x[r * ref->d + j] - m;
            ss += dv * dv;
        }
        double s = sqrt(ss / (double)ref->n);
        if (s == 0)
            s = 1;
        if (mean)
            mean[j] = m;
        if (sd)
            sd[j] = s;
        /* ref may be t: its column j is only read above, before it is written */
        for (int64_t r = 0; r < t->n; r++)
            t->x[r * t->d + j] = (float)(((double)t->x[r * t->d + j] - m) / s);
    }
    return REMAT_OK;
}

/* ---- reading ---- */

/* The number of cells in line; the first `cap` go to cells[], trimmed. */
static int64_t split_cells(span line, span *cells, int64_t cap)
{
    int64_t k = 0;
    const char *p = line.s, *end = line.s + line.len;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if (k < cap)
            cells[k] = csv_trim((span){p, (size_t)(stop - p)});
        k++;
        if (!comma)
            return k;
        p = comma + 1;
    }
}

/* a feature: a csv_number that is finite in f32 */
static num_result parse_feature(span c, float *out)
{
    double v;
    num_result res = csv_number(c, &v);
    if (res == NUM_OK && !(fabs(v) <= FLT_MAX))
        res = NUM_RANGE;
    if (res == NUM_OK)
        *out = (float)v;
    return res;
}

typedef struct {
    const char *path;
    int32_t given_classes; /* 0: inferred */
    int64_t ncols, label_col;
    span *cells;           /* (ncols) of the line being read */
    span *names;           /* (ncols) the header's */
    remat_labeled *t;
    int32_t max_label;
} reader;

static remat_status parse_header(reader *r, span line, int lineno, const char *label_name)
{
    char a[160];
    int64_t ncols = split_cells(line, NULL, 0);
    const char *sep = csv_other_separator(line);
    if (sep)
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:%d:1: the header has %ss and no commas: a %s-separated file? (this reader takes "
                         "comma-separated values)",
                         r->path, lineno, sep, sep);
    r->ncols = ncols;
    r->cells = rmi_malloc(sizeof *r->cells * (size_t)ncols);
    r->names = rmi_malloc(sizeof *r->names * (size_t)ncols);
    if (!r->cells || !r->names)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for %lld columns", r->path, (long long)ncols);
    split_cells(line, r->names, ncols);
    r->label_col = -1;
    size_t bytes = 0;
    for (int64_t j = 0; j < ncols; j++) {
        span c = r->names[j];
        if (c.len == 0)
            return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: column %lld of the header has no name", r->path,
                             lineno, (long long)j + 1, (long long)j + 1);
        for (int64_t k = 0; k < j; k++)
            if (r->names[k].len == c.len && memcmp(r->names[k].s, c.s, c.len) == 0)
                return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: duplicate column name %s (columns %lld and %lld)",
                                 r->path, lineno, (long long)j + 1, csv_show(c, a, sizeof a), (long long)k + 1,
                                 (long long)j + 1);
        if (c.len == strlen(label_name) && memcmp(c.s, label_name, c.len) == 0)
            r->label_col = j;
        bytes += c.len + 1;
    }
    if (r->label_col < 0)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:1: no label column '%s' in the header (%lld columns)", r->path,
                         lineno, label_name, (long long)ncols);
    if (ncols < 2)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:1: the header has only the label column, no features", r->path,
                         lineno);
    remat_labeled *t = r->t;
    t->d = ncols - 1;
    char *blob = rmi_malloc(bytes), *p = blob;
    if (!blob)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", r->path);
    for (int64_t j = 0; j <= ncols; j++) { /* features in file order, then the label (j == ncols) */
        if (j == r->label_col)
            continue;
        span c = r->names[j == ncols ? r->label_col : j];
        memcpy(p, c.s, c.len);
        p[c.len] = '\0';
        p += c.len + 1;
    }
    int ok = set_names(t, blob, bytes);
    rmi_free(blob);
    return ok ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", r->path);
}

static remat_status parse_label(reader *r, span c, int lineno, int32_t *y)
{
    char a[160];
    long long col = (long long)r->label_col + 1;
    size_t i = c.len && c.s[0] == '+' ? 1 : 0;
    int negative = c.len && c.s[0] == '-';
    if (negative)
        i = 1;
    size_t first = i;
    long long v = 0;
    int big = 0;
    for (; i < c.len && isdigit((unsigned char)c.s[i]); i++) {
        v = v * 10 + (c.s[i] - '0');
        if (v > INT32_MAX)
            big = 1, v = INT32_MAX;
    }
    if (c.len == 0)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: empty label cell", r->path, lineno, col);
    if (i == first || i != c.len)
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:%d:%lld: label %s is not an integer (labels are class numbers 0, 1, 2, ...)",
                         r->path, lineno, col, csv_show(c, a, sizeof a));
    if (negative && v != 0)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: label %s is negative", r->path, lineno, col,
                         csv_show(c, a, sizeof a));
    if (r->given_classes && v >= r->given_classes)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: label %s is too large: n_classes is %d", r->path,
                         lineno, col, csv_show(c, a, sizeof a), (int)r->given_classes);
    if (big || v >= REMAT_LABELED_MAX_CLASSES)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: label %s is too large (at most %d classes)", r->path,
                         lineno, col, csv_show(c, a, sizeof a), REMAT_LABELED_MAX_CLASSES);
    *y = (int32_t)v;
    return REMAT_OK;
}

static remat_status parse_row(reader *r, span line, int lineno)
{
    char a[160], b[160];
    remat_labeled *t = r->t;
    int64_t found = split_cells(line, r->cells, r->ncols);
    if (found != r->ncols)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: ragged row: expected %lld cells (the header's), found %lld",
                         r->path, lineno, (long long)(found > r->ncols ? r->ncols + 1 : found + 1),
                         (long long)r->ncols, (long long)found);
    int64_t row = t->n;
    float *x = t->x + row * t->d;
    for (int64_t j = 0, f = 0; j < r->ncols; j++) {
        span c = r->cells[j];
        if (j == r->label_col) {
            remat_status st = parse_label(r, c, lineno, &t->y[row]);
            if (st != REMAT_OK)
                return st;
            continue;
        }
        const char *col = csv_show(r->names[j], b, sizeof b);
        switch (parse_feature(c, &x[f++])) {
        case NUM_OK: break;
        case NUM_EMPTY:
            return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: column %s: empty cell (every feature needs a number)",
                             r->path, lineno, (long long)j + 1, col);
        case NUM_NONFINITE:
            return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: column %s: %s is not a finite number", r->path,
                             lineno, (long long)j + 1, col, csv_show(c, a, sizeof a));
        case NUM_RANGE:
            return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: column %s: %s is out of a float's range (not finite in f32)",
                             r->path, lineno, (long long)j + 1, col, csv_show(c, a, sizeof a));
        case NUM_BAD:
            return rmi_error(REMAT_ERR_PARSE, "%s:%d:%lld: column %s: %s is not a number", r->path, lineno,
                             (long long)j + 1, col, csv_show(c, a, sizeof a));
        }
    }
    if (t->y[row] > r->max_label)
        r->max_label = t->y[row];
    t->origin[row] = row;
    t->n++;
    return REMAT_OK;
}

static remat_status parse_csv(reader *r, const char *text, size_t n, const char *label_name)
{
    remat_status st = csv_check_text(r->path, text, n, 1);
    if (st != REMAT_OK)
        return st;
    csv_skip_bom(&text, &n);
    int64_t max_rows = (int64_t)csv_count_lines(text, n);
    int lineno = 0, header_line = 0;
    span line;
    for (const char *p = text; csv_next_line(&p, text + n, &lineno, &line);) {
        if (header_line) {
            st = parse_row(r, line, lineno);
        } else {
            st = parse_header(r, line, lineno, label_name);
            if (st == REMAT_OK && !alloc_rows(r->t, max_rows))
                st = rmi_error(REMAT_ERR_NOMEM, "%s: out of memory for %lld rows", r->path, (long long)max_rows);
            header_line = lineno;
        }
        if (st != REMAT_OK)
            return st;
    }
    if (!header_line)
        return rmi_error(REMAT_ERR_PARSE, "%s:1:1: empty file (expected a header row)", r->path);
    if (r->t->n == 0)
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:1: a header and no rows", r->path, header_line);
    r->t->n_classes = r->given_classes ? r->given_classes : r->max_label + 1;
    return REMAT_OK;
}

remat_status remat_labeled_load(const char *path, const remat_labeled_options *opt, remat_labeled **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_labeled_load: out is NULL");
    *out = NULL;
    if (!path)
        return rmi_error(REMAT_ERR_NULL, "remat_labeled_load: path is NULL");
    const char *label_name = opt && opt->label_column ? opt->label_column : "label";
    int32_t given = opt ? opt->n_classes : 0;
    if (!label_name[0])
        return rmi_error(REMAT_ERR_VALUE, "remat_labeled_load: label_column is empty");
    if (given < 0 || given > REMAT_LABELED_MAX_CLASSES)
        return rmi_error(REMAT_ERR_VALUE, "remat_labeled_load: n_classes %d is not in 0..%d (0: inferred)",
                         (int)given, REMAT_LABELED_MAX_CLASSES);
    char *text = NULL;
    size_t n = 0;
    remat_status st = rmi_read_file(path, "data file", &text, &n);
    if (st != REMAT_OK)
        return st;
    reader r = {.path = path, .given_classes = given, .t = rmi_calloc(1, sizeof(remat_labeled))};
    st = r.t ? parse_csv(&r, text, n, label_name) : rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", path);
    rmi_free(text);
    rmi_free(r.cells);
    rmi_free(r.names);
    if (st != REMAT_OK) {
        remat_labeled_free(r.t);
        return st;
    }
    *out = r.t;
    return REMAT_OK;
}
