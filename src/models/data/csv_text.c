/*
 * csv_text.c — CSV cells shared by the data readers (csv_text.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

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
