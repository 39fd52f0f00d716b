/* cli.c — option parsing (numbers, options given twice) and JSON strings for the remat tool (output files: cli_out.c). */
#include <errno.h>
#include <getopt.h>
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
