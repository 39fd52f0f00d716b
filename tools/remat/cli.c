/* cli.c — option parsing (numbers, options given twice) and JSON strings for the remat tool (output files: cli_out.c). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

int cli_int64(const char *opt, const char *text, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (text && *text && !*end && errno == ERANGE) { /* digits, but past int64 */
        fprintf(stderr, "remat: %s: %s is out of range [%lld, %lld]\n", opt, text, (long long)lo, (long long)hi);
        return 0;
    }
    if (!text || !*text || *end || errno) {
        fprintf(stderr, "remat: %s: '%s' is not an integer\n", opt, text ? text : "");
        return 0;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "remat: %s: %lld is out of range [%lld, %lld]\n", opt, v, (long long)lo, (long long)hi);
        return 0;
    }
    *out = v;
    return 1;
}

cli_num cli_strtod(const char *text, const char **end, double *out)
{
    const char *p = text ? text : "", *q;
    *end = p;
    if (*p == '+' || *p == '-')
        p++;
    for (q = p; isalpha((unsigned char)*q); q++)
        ;
    size_t n = (size_t)(q - p);
    if ((n == 3 && !strncasecmp(p, "nan", 3)) || (n == 3 && !strncasecmp(p, "inf", 3)) ||
        (n == 8 && !strncasecmp(p, "infinity", 8))) {
        *end = q;
        return CLI_NUM_NONFINITE;
    }
    /* decimal only, as the mechanism and data files write numbers: strtod's
     * hex ("0x1p3") is not taken here either */
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return CLI_NUM_HEX;
    int digits = 0, nonzero = 0;
    for (q = p; isdigit((unsigned char)*q); q++)
        digits++, nonzero |= *q != '0';
    if (*q == '.')
        for (q++; isdigit((unsigned char)*q); q++)
            digits++, nonzero |= *q != '0';
    if (!digits)
        return CLI_NUM_BAD;
    if (*q == 'e' || *q == 'E') {
        const char *e = q + 1 + (q[1] == '+' || q[1] == '-');
        if (isdigit((unsigned char)*e))
            for (q = e; isdigit((unsigned char)*q); q++)
                ;
    }
    /* strtod on the decimal prefix alone: on all of "0x10" it would read hex */
    char buf[128];
    size_t len = (size_t)(q - text);
    if (len >= sizeof buf)
        return CLI_NUM_BAD;
    memcpy(buf, text, len);
    buf[len] = 0;
    double v = strtod(buf, NULL);
    *end = q;
    if (isinf(v))
        return CLI_NUM_OVERFLOW;
    if (v == 0 && nonzero)
        return CLI_NUM_UNDERFLOW; /* subnormals (5e-324) are numbers; only what rounds to 0 is not */
    *out = v;
    return CLI_NUM_OK;
}

const char *cli_num_why(cli_num k)
{
    switch (k) {
    case CLI_NUM_OK: return "is a number";
    case CLI_NUM_NONFINITE: return "is not a finite number";
    case CLI_NUM_OVERFLOW: return "is out of range (beyond the largest double, 1.8e308)";
    case CLI_NUM_UNDERFLOW: return "is out of range (it rounds to 0: the smallest double is 4.9e-324)";
    case CLI_NUM_HEX: return "is not a decimal number (hexadecimal is not read)";
    case CLI_NUM_BAD: break;
    }
    return "is not a finite number";
}

int cli_double(const char *opt, const char *text, double *out)
{
    const char *end;
    double v = 0;
    cli_num k = cli_strtod(text, &end, &v);
    if (k == CLI_NUM_OK && *end)
        k = CLI_NUM_BAD;
    if (k != CLI_NUM_OK) {
        fprintf(stderr, "remat: %s: '%s' %s\n", opt, text ? text : "", cli_num_why(k));
        return 0;
    }
    *out = v;
    return 1;
}

int cli_bytes(const char *opt, const char *text, int64_t *out)
{
    const char *end, *start = text && (*text == '+') ? text + 1 : text;
    double v = 0;
    cli_num k = cli_strtod(text, &end, &v);
    if (k != CLI_NUM_OK || v < 0) {
        fprintf(stderr, "remat: %s: '%s' is not a byte count (e.g. 65536, 64k, 1.5M, 2G%s)\n", opt, text ? text : "",
                k == CLI_NUM_HEX ? "; hexadecimal is not read" : "");
        return 0;
    }
    double mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024.0, end++;
    else if (*end == 'M')
        mul = 1024.0 * 1024.0, end++;
    else if (*end == 'G')
        mul = 1024.0 * 1024.0 * 1024.0, end++;
    if (*end == 'B')
        end++;
    if (*end) {
        fprintf(stderr, "remat: %s: '%s' has an unknown suffix '%s' (use k, M or G)\n", opt, text, end);
        return 0;
    }
    /* a whole number of bytes is read as an integer: 2^63 - 1 is a double
     * of 2^63, past the range, though the count itself is in it */
    int whole = 1;
    for (const char *c = start; c < start + strcspn(start, "kKMGB"); c++)
        whole &= isdigit((unsigned char)*c) != 0;
    errno = 0;
    long long n = whole ? strtoll(start, NULL, 10) : 0;
    if (whole && errno != ERANGE && n <= INT64_MAX / (int64_t)mul) {
        *out = (int64_t)n * (int64_t)mul;
        return 1;
    }
    if (whole || !(v * mul < 0x1p63)) { /* the conversion below would be undefined */
        fprintf(stderr, "remat: %s: '%s' is out of range (at most 2^63 - 1 bytes, 8589934591G)\n", opt, text);
        return 0;
    }
    *out = (int64_t)(v * mul);
    return 1;
}

void cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

/* The option of opts that "--name..." names as getopt_long finds it (exact,
 * else a unique prefix); -1 when none or ambiguous (getopt says so). */
static int find_long(const struct option *opts, const char *name, size_t len)
{
    int found = -1;
    for (int k = 0; opts[k].name; k++) {
        if (strncmp(opts[k].name, name, len))
            continue;
        if (strlen(opts[k].name) == len)
            return k;
        if (found >= 0)
            return -1;
        found = k;
    }
    return found;
}

int cli_options_once(int argc, char **argv, const struct option *opts, const char *const *repeatable)
{
    int n = 0;
    while (opts[n].name)
        n++;
    const char **first = calloc((size_t)n + 1, sizeof *first);
    if (!first) {
        fprintf(stderr, "remat: out of memory reading the options\n");
        return 0;
    }
    int ok = 1;
    for (int i = 1; ok && i < argc && strcmp(argv[i], "--"); i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2))
            continue; /* an operand (refused later) or -h */
        size_t len = strcspn(a + 2, "=");
        int k = find_long(opts, a + 2, len);
        if (k < 0 || opts[k].has_arg != required_argument)
            continue;
        const char *name = opts[k].name, *value = a[2 + len] ? a + 3 + len : i + 1 < argc ? argv[++i] : NULL;
        if (!value)
            break; /* getopt says it needs a value */
        if (!a[2 + len] && !strncmp(value, "--", 2) && value[2]) {
            fprintf(stderr, "remat: --%s: expects a value, not the option '%s' (a value that starts with '--': "
                            "--%s=%s)\n", name, value, name, value);
            ok = 0;
            break;
        }
        int may_repeat = 0;
        for (const char *const *r = repeatable; r && *r; r++)
            may_repeat |= !strcmp(*r, name);
        if (first[k] && !may_repeat) {
            fprintf(stderr, "remat: --%s: given twice ('%s', then '%s'): the second would replace the first; give "
                            "it once", name, first[k], value);
            if (strchr(first[k], '=')) /* a NAME=VALUE list: both in one */
                fprintf(stderr, ", every item in one list (--%s %s,%s)", name, first[k], value);
            fputc('\n', stderr);
            ok = 0;
        }
        first[k] = value;
    }
    free(first);
    return ok;
}
