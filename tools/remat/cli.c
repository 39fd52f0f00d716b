/* cli.c — option parsing and JSON strings for the remat tool (output files: cli_out.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int cli_double(const char *opt, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    if (!text || !*text || *end || errno || !isfinite(v)) {
        fprintf(stderr, "remat: %s: '%s' is not a finite number\n", opt, text ? text : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cli_bytes(const char *opt, const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    if (!text || !*text || errno || end == text || !isfinite(v) || v < 0) {
        fprintf(stderr, "remat: %s: '%s' is not a byte count (e.g. 65536, 64k, 1.5M, 2G)\n", opt, text ? text : "");
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
    if (!(v * mul < 0x1p63)) { /* the conversion below would be undefined */
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
