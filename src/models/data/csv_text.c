/*
 * csv_text.c — CSV cells shared by the data readers (csv_text.h).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "csv_text.h"

span csv_trim(span c)
{
    while (c.len && (c.s[0] == ' ' || c.s[0] == '\t'))
        c.s++, c.len--;
    while (c.len && (c.s[c.len - 1] == ' ' || c.s[c.len - 1] == '\t'))
        c.len--;
    if (c.len >= 2 && c.s[0] == '"' && c.s[c.len - 1] == '"')
        c.s++, c.len -= 2;
    return c;
}

int csv_span_is(span c, const char *word)
{
    size_t n = strlen(word);
    if (c.len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)c.s[i]) != word[i])
            return 0;
    return 1;
}

const char *csv_show(span c, char *buf, size_t cap)
{
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < c.len && o + 8 < cap; i++) {
        unsigned char ch = (unsigned char)c.s[i];
        if (i == 40) {
            o += (size_t)snprintf(buf + o, cap - o, "...");
            break;
        }
        if (ch >= 0x20 && ch < 0x7f)
            buf[o++] = (char)ch;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

num_result csv_number(span c, double *v)
{
    if (c.len == 0)
        return NUM_EMPTY;
    span b = c;
    if (b.s[0] == '+' || b.s[0] == '-')
        b.s++, b.len--;
    if (csv_span_is(b, "nan") || csv_span_is(b, "inf") || csv_span_is(b, "infinity"))
        return NUM_NONFINITE;
    size_t i = 0;
    int digits = 0;
    while (i < b.len && isdigit((unsigned char)b.s[i]))
        i++, digits++;
    if (i < b.len && b.s[i] == '.')
        for (i++; i < b.len && isdigit((unsigned char)b.s[i]); i++)
            digits++;
    if (!digits)
        return NUM_BAD;
    if (i < b.len && (b.s[i] == 'e' || b.s[i] == 'E')) {
        i++;
        if (i < b.len && (b.s[i] == '+' || b.s[i] == '-'))
            i++;
        int exp_digits = 0;
        while (i < b.len && isdigit((unsigned char)b.s[i]))
            i++, exp_digits++;
        if (!exp_digits)
            return NUM_BAD;
    }
    char buf[256];
    if (i != b.len || c.len >= sizeof buf)
        return NUM_BAD;
    memcpy(buf, c.s, c.len);
    buf[c.len] = '\0';
    *v = strtod(buf, NULL);
    return isfinite(*v) ? NUM_OK : NUM_RANGE;
}

void csv_skip_bom(const char **text, size_t *n)
{
    if (*n >= 3 && memcmp(*text, "\xEF\xBB\xBF", 3) == 0)
        *text += 3, *n -= 3;
}

size_t csv_count_lines(const char *text, size_t n)
{
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    return lines;
}

int csv_next_line(const char **p, const char *end, int *lineno, span *line)
{
    while (*p < end) {
        const char *nl = memchr(*p, '\n', (size_t)(end - *p));
        *line = (span){*p, (size_t)((nl ? nl : end) - *p)};
        *p = nl ? nl + 1 : end;
        ++*lineno;
        if (line->len && line->s[line->len - 1] == '\r')
            line->len--;
        for (size_t k = 0; k < line->len; k++)
            if (line->s[k] != ' ' && line->s[k] != '\t')
                return 1;
    }
    return 0;
}

remat_status csv_check_text(const char *path, const char *text, size_t n, int with_column)
{
    const unsigned char *u = (const unsigned char *)text;
    const char *col = with_column ? "1:" : "";
    if (n >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)))
        return rmi_error(REMAT_ERR_PARSE, "%s:1:%s UTF-16 text (byte-order mark %02X %02X); save the file as UTF-8",
                         path, col, u[0], u[1]);
    const char *nul = memchr(text, '\0', n);
    if (nul) {
        if (n >= 2 && (u[0] == 0) != (u[1] == 0))
            return rmi_error(REMAT_ERR_PARSE,
                             "%s:1:%s UTF-16 text (NUL bytes between the characters); save the file as UTF-8",
                             path, col);
        int line = 1;
        for (const char *p = text; p < nul; p++)
            line += *p == '\n';
        return rmi_error(REMAT_ERR_PARSE, "%s:%d:%s NUL byte (is this a binary file?)", path, line, col);
    }
    /* A CR not before a LF in a file without LFs: one long line otherwise. */
    const char *cr = memchr(text, '\r', n);
    if (cr && !memchr(text, '\n', n) && cr + 1 < text + n)
        return rmi_error(REMAT_ERR_PARSE,
                         "%s:1:%s lines end in CR only (classic Mac OS line endings); save the file with LF "
                         "or CR LF line endings",
                         path, col);
    return REMAT_OK;
}

const char *csv_other_separator(span header)
{
    if (memchr(header.s, ',', header.len))
        return NULL;
    if (memchr(header.s, '\t', header.len))
        return "tab";
    if (memchr(header.s, ';', header.len))
        return "semicolon";
    return NULL;
}
