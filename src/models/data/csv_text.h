/*
 * csv_text.h (internal) — the pieces of CSV text handling the data readers
 * share (dataset.c: measurements, labeled.c: labelled tables): spans of
 * the file's bytes, trimmed cells, cells quoted for messages.
 */
#ifndef REMAT_MODELS_DATA_CSV_TEXT_H
#define REMAT_MODELS_DATA_CSV_TEXT_H

#include <stddef.h>

typedef struct {
    const char *s;
    size_t len;
} span;

/* Spaces and tabs off both ends, then one pair of enclosing double quotes. */
span csv_trim(span c);
/* c equals word (lower case) ignoring ASCII case. */
int csv_span_is(span c, const char *word);
/* A cell for a message: quoted, cut at 40 bytes, non-printable bytes as \xNN. */
const char *csv_show(span c, char *buf, size_t cap);

#endif
