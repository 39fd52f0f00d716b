/*
 * lexer.c — tokens of the mechanism format, and the checks that make any
 * byte string safe to lex (NUL bytes, invalid UTF-8, over-long lines).
 * Columns count bytes from 1, as compilers do.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

remat_status mech_error_at(const char *file, int line, int col, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rmi_error(REMAT_ERR_PARSE, "%s:%d:%d: %s", file, line, col, msg);
}

const char *mech_tok_show(const mech_token *t, char *buf, size_t len)
{
    if (t->kind == TOK_EOL)
        snprintf(buf, len, "end of line");
    else if (t->kind == TOK_EOF)
        snprintf(buf, len, "end of file");
    else if (t->len > 40)
        snprintf(buf, len, "'%.40s...'", t->text);
    else
        snprintf(buf, len, "'%.*s'", t->len, t->text);
    return buf;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF), 0 if it is not one. */
static int utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    int len;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4;
    else
        return 0;
    if ((size_t)len > n)
        return 0;
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) ||
        (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))
        return 0;
    return len;
}

remat_status mech_check_text(const char *file, const char *src, size_t n)
{
    const unsigned char *s = (const unsigned char *)src;
    /* CR alone ends no line here (CR LF does): a file of such lines would
     * read as one, and fail at its second statement with a puzzling message */
    const char *cr = memchr(src, '\r', n);
    if (cr && cr + 1 < src + n && !memchr(src, '\n', n))
        return mech_error_at(file, 1, (int)(cr - src) + 1,
                             "lines end in CR only (classic Mac OS line endings); save the file with LF or CR LF "
                             "line endings");
    size_t line_start = 0;
    int line = 1;
    for (size_t i = 0; i <= n;) {
        if (i == n || s[i] == '\n') {
            if (i - line_start > MECH_MAX_LINE)
                return mech_error_at(file, line, MECH_MAX_LINE + 1,
                                     "line longer than %d bytes", MECH_MAX_LINE);
            if (i == n)
                break;
            line++;
            line_start = ++i;
            continue;
        }
        int col = (int)(i - line_start) + 1; /* < MECH_MAX_LINE + 2 or caught above */
        if (i - line_start > MECH_MAX_LINE) {
            i++;
            continue; /* reported at the newline */
        }
        if (s[i] == 0)
            return mech_error_at(file, line, col, "NUL byte (is this a binary file?)");
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int len = utf8_len(s + i, n - i);
        if (len == 0)
            return mech_error_at(file, line, col, "invalid UTF-8 byte 0x%02x (is this a binary file?)",
                                 s[i]);
        i += (size_t)len;
    }
    return REMAT_OK;
}

void mech_lex_init(mech_lexer *lx, const char *file, const char *src, size_t n)
{
    *lx = (mech_lexer){.file = file, .src = src, .n = n, .line = 1};
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_name_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_name_char(int c) { return is_name_start(c) || is_digit(c); }

/* NUMBER = digits [ "." digits ] | "." digits, then [ (e|E) [+|-] digits ].
 * The whole run of number-like characters is taken first so that "1.2.3",
 * "1e" and "2A" are reported as one bad token. */
static remat_status lex_number(mech_lexer *lx, mech_token *tok)
{
    const char *s = lx->src;
    size_t i = lx->pos, n = lx->n;
    int digits = 0, dots = 0, ok = 1, letter_after = 0;
    while (i < n && (is_digit(s[i]) || s[i] == '.')) {
        digits += is_digit(s[i]);
        dots += s[i] == '.';
        i++;
    }
    if (digits == 0 || dots > 1)
        ok = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        int exp_digits = 0;
        while (i < n && is_digit(s[i])) {
            exp_digits++;
            i++;
        }
        if (exp_digits == 0)
            ok = 0;
    }
    if (i < n && (is_name_char(s[i]) || s[i] == '.')) {
        letter_after = ok && is_name_start(s[i]);
        ok = 0;
        while (i < n && (is_name_char(s[i]) || s[i] == '.'))
            i++;
    }
    tok->kind = TOK_NUM;
    tok->text = s + lx->pos;
    tok->len = (int)(i - lx->pos);
    lx->pos = i;
    char shown[64];
    if (!ok)
        return mech_error_at(lx->file, tok->line, tok->col, "bad number %s%s",
                             mech_tok_show(tok, shown, sizeof shown),
                             letter_after ? " (put a space between a coefficient and a species)" : "");
    char buf[256];
    if (tok->len >= (int)sizeof buf)
        return mech_error_at(lx->file, tok->line, tok->col, "number %s is too long",
                             mech_tok_show(tok, shown, sizeof shown));
    memcpy(buf, tok->text, (size_t)tok->len);
    buf[tok->len] = '\0';
    tok->num = strtod(buf, NULL);
    if (!isfinite(tok->num))
        return mech_error_at(lx->file, tok->line, tok->col, "number %s is out of range",
                             mech_tok_show(tok, shown, sizeof shown));
    return REMAT_OK;
}

remat_status mech_lex_next(mech_lexer *lx, mech_token *tok)
{
    const char *s = lx->src;
    size_t n = lx->n;
    while (lx->pos < n && (s[lx->pos] == ' ' || s[lx->pos] == '\t' || s[lx->pos] == '\r'))
        lx->pos++;
    if (lx->pos < n && s[lx->pos] == '#')
        while (lx->pos < n && s[lx->pos] != '\n')
            lx->pos++;
    *tok = (mech_token){.text = s + lx->pos, .len = 1, .line = lx->line,
                        .col = (int)(lx->pos - lx->line_start) + 1};
    if (lx->pos >= n) {
        tok->kind = TOK_EOF;
        tok->len = 0;
        return REMAT_OK;
    }
    unsigned char c = (unsigned char)s[lx->pos];
    if (c == '\n') {
        tok->kind = TOK_EOL;
        lx->pos++;
        lx->line++;
        lx->line_start = lx->pos;
        return REMAT_OK;
    }
    if (is_name_start(c)) {
        size_t i = lx->pos;
        while (i < n && is_name_char(s[i]))
            i++;
        tok->kind = TOK_NAME;
        tok->len = (int)(i - lx->pos);
        lx->pos = i;
        if (tok->len > MECH_MAX_NAME) {
            char shown[64];
            return mech_error_at(lx->file, tok->line, tok->col, "name %s is too long (more than %d bytes)",
                                 mech_tok_show(tok, shown, sizeof shown), MECH_MAX_NAME);
        }
        return REMAT_OK;
    }
    if (is_digit(c) || (c == '.' && lx->pos + 1 < n && is_digit(s[lx->pos + 1])))
        return lex_number(lx, tok);
    char next = lx->pos + 1 < n ? s[lx->pos + 1] : '\0';
    char next2 = lx->pos + 2 < n ? s[lx->pos + 2] : '\0';
    switch (c) {
    case '+': tok->kind = TOK_PLUS; break;
    case '-':
        tok->kind = next == '>' ? TOK_ARROW : TOK_MINUS;
        tok->len = next == '>' ? 2 : 1;
        break;
    case '*': tok->kind = TOK_STAR; break;
    case '/': tok->kind = TOK_SLASH; break;
    case '^': tok->kind = TOK_CARET; break;
    case '(': tok->kind = TOK_LPAREN; break;
    case ')': tok->kind = TOK_RPAREN; break;
    case ',': tok->kind = TOK_COMMA; break;
    case ':': tok->kind = TOK_COLON; break;
    case '=': tok->kind = TOK_EQ; break;
    case '\'': tok->kind = TOK_PRIME; break;
    case '[': tok->kind = TOK_LBRACK; break;
    case ']': tok->kind = TOK_RBRACK; break;
    case '<':
        if (next == '=' && next2 == '>') {
            tok->kind = TOK_REVERSIBLE;
            tok->len = 3;
            break;
        }
        return mech_error_at(lx->file, tok->line, tok->col,
                             "unexpected character '<' (a reversible reaction is written '<=>')");
    default:
        if (c >= 0x80) {
            /* valid UTF-8 (mech_check_text ran): show the whole character */
            int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            return mech_error_at(lx->file, tok->line, tok->col,
                                 "unexpected character '%.*s' (non-ASCII is allowed only in comments)",
                                 len, s + lx->pos);
        }
        if (c < 0x20 || c == 0x7f)
            return mech_error_at(lx->file, tok->line, tok->col, "unexpected control character 0x%02x",
                                 c);
        return mech_error_at(lx->file, tok->line, tok->col, "unexpected character '%c'", c);
    }
    lx->pos += (size_t)tok->len;
    return REMAT_OK;
}
