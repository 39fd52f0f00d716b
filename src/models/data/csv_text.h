/*
 * csv_text.h (internal) — the pieces of CSV text handling the data readers
 * share (dataset.c: measurements, labeled.c: labelled tables): spans of
 * the file's bytes, trimmed cells, cells quoted for messages.
 */
#ifndef REMAT_MODELS_DATA_CSV_TEXT_H
#define REMAT_MODELS_DATA_CSV_TEXT_H

#include <stddef.h>

#include "remat/status.h"

typedef struct {
    const char *s;
    size_t len;
} span;

typedef enum { NUM_OK, NUM_EMPTY, NUM_NONFINITE, NUM_RANGE, NUM_BAD } num_result;

/* A cell as a number: [+-] (digits [. [digits]] | . digits) [(e|E) [+-]
 * digits], finite as a double. NaN/inf spellings are NUM_NONFINITE, a value
 * past the double range NUM_RANGE, anything else not of that form NUM_BAD. */
num_result csv_number(span c, double *v);

/* Text a CSV reader cannot take, named for what it is: UTF-16 (a byte-order
 * mark FF FE / FE FF, or NUL bytes between the characters), another NUL byte
 * (binary), lines ended by CR alone (classic Mac OS). REMAT_ERR_PARSE with
 * "path:line: " (or "path:line:1: " when with_column) and the reason. */
remat_status csv_check_text(const char *path, const char *text, size_t n, int with_column);
/* A header line with tabs (or semicolons) and no comma: the separator the
 * file seems to use, else NULL. */
const char *csv_other_separator(span header);
/* The text after a UTF-8 byte-order mark, if it starts with one. */
void csv_skip_bom(const char **text, size_t *n);
/* Lines in text (an upper bound on the rows). */
size_t csv_count_lines(const char *text, size_t n);
/* The next non-blank line from *p (< end) on, "\r\n" or "\n" cut off;
 * *lineno counts every line (1-based). Returns 0 at the end. */
int csv_next_line(const char **p, const char *end, int *lineno, span *line);

/* Spaces and tabs off both ends, then one pair of enclosing double quotes. */
span csv_trim(span c);
/* c equals word (lower case) ignoring ASCII case. */
int csv_span_is(span c, const char *word);
/* A cell for a message: quoted, cut at 40 bytes, non-printable bytes as \xNN. */
const char *csv_show(span c, char *buf, size_t cap);

#endif
