/* ensemble_csv.c — parameter sets of `remat pfr ensemble` from CSV (ensemble_csv.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ensemble_csv.h"
#include "pfr_cli.h"

#define MAX_LINE (1 << 20) /* one set's line; longer is not a parameter set */

/* The next line into c->line without its end of line: 1, 0 at the end of
 * the file, -1 with the reason in err. */
static int next_line(ens_csv *c, char *err, size_t errlen)
{
    size_t n = 0;
    int ch;
    while ((ch = getc(c->f)) != EOF && ch != '\n') {
        if (ch == '\0') { /* no CSV holds one: a binary file, refused at its first line */
            snprintf(err, errlen, "%s:%lld: a NUL byte (is this a binary file?)", c->path, (long long)c->lineno + 1);
            return -1;
        }
        if (n + 2 > c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 256;
            char *p = cap <= MAX_LINE ? realloc(c->line, cap) : NULL;
            if (!p) {
                snprintf(err, errlen, "%s:%lld: %s", c->path, (long long)c->lineno + 1,
                         cap > MAX_LINE ? "line longer than 1 MiB" : "out of memory");
                return -1;
            }
            c->line = p;
            c->cap = cap;
        }
        c->line[n++] = (char)ch;
    }
    if (ferror(c->f)) {
        snprintf(err, errlen, "%s: read error: %s", c->path, strerror(errno));
        return -1;
    }
    if (ch == EOF && n == 0)
        return 0;
    if (n && c->line[n - 1] == '\r')
        n--;
    if (!c->line) { /* an empty first line */
        if (!(c->line = malloc(c->cap = 256))) {
            snprintf(err, errlen, "%s: out of memory", c->path);
            return -1;
        }
    }
    c->line[n] = 0;
    if (c->lineno == 0 && n >= 3 && !memcmp(c->line, "\xEF\xBB\xBF", 3))
        memmove(c->line, c->line + 3, n - 2); /* a UTF-8 byte-order mark, as some editors save */
    c->lineno++;
    return 1;
}

static int blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return !*s;
}

/* s without the blanks around it, then without one pair of enclosing
 * double quotes (as spreadsheets write cells), in place */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = 0;
    if (e - s >= 2 && s[0] == '"' && e[-1] == '"') {
        *--e = 0;
        s++;
    }
    return s;
}

int ens_csv_open(ens_csv *c, const char *path, const remat_mechanism *m, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->m = m;
    if (!(c->f = fopen(path, "r"))) {
        snprintf(err, errlen, "--params-file: cannot read %s: %s", path, strerror(errno));
        return 0;
    }
    int r;
    while ((r = next_line(c, err, errlen)) == 1 && blank(c->line))
        ;
    if (r <= 0) {
        if (r == 0)
            snprintf(err, errlen, "%s: empty: the first line names the parameters of the sets (e.g. %s)", path,
                     remat_mechanism_param_count(m) ? remat_mechanism_param_name(m, 0) : "k1");
        goto fail;
    }
    int P = remat_mechanism_param_count(m), n = 1;
    for (const char *s = c->line; *s; s++)
        n += *s == ',';
    c->param = malloc(sizeof *c->param * (size_t)n);
    c->name = calloc((size_t)n, sizeof *c->name);
    if (!c->param || !c->name) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    char *p = c->line;
    for (int j = 0; j < n; j++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        char *name = trim(p);
        int i = remat_mechanism_param_find(m, name);
        if (i < 0) {
            char names[1024];
            int used = 0;
            names[0] = 0;
            for (int k = 0; k < P && used < (int)sizeof names; k++)
                used += snprintf(names + used, sizeof names - (size_t)used, "%s%s", k ? ", " : "",
                                 remat_mechanism_param_name(m, k));
            snprintf(err, errlen, "%s:%lld: column %d '%s' is not a parameter of %s (parameters: %s)", path,
                     (long long)c->lineno, j + 1, name, remat_mechanism_source(m), P ? names : "none");
            goto fail;
        }
        for (int k = 0; k < j; k++)
            if (c->param[k] == i) {
                snprintf(err, errlen, "%s:%lld: parameter '%s' is named twice (columns %d and %d)", path,
                         (long long)c->lineno, name, k + 1, j + 1);
                goto fail;
            }
        c->param[j] = i;
        c->ncol = j + 1;
        if (!(c->name[j] = strdup(name))) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto fail;
        }
        p = comma ? comma + 1 : p + strlen(p);
    }
    return 1;
fail:
    ens_csv_close(c);
    return 0;
}

/* one set from c->line into v (ncol) */
static int parse_row(ens_csv *c, double *v, char *err, size_t errlen)
{
    char *p = c->line;
    for (int j = 0; j < c->ncol; j++) {
        char *comma = strchr(p, ',');
        if (!comma && j + 1 < c->ncol) {
            snprintf(err, errlen, "%s:%lld: %d value%s, the header names %d parameters", c->path,
                     (long long)c->lineno, j + 1, j ? "s" : "", c->ncol);
            return 0;
        }
        if (comma && j + 1 == c->ncol) {
            int k = j + 1;
            for (const char *s = comma; *s; s++)
                k += *s == ',';
            snprintf(err, errlen, "%s:%lld: %d values, the header names %d parameter%s", c->path,
                     (long long)c->lineno, k, c->ncol, c->ncol == 1 ? "" : "s");
            return 0;
        }
        if (comma)
            *comma = 0;
        char *text = trim(p);
        const char *end;
        double x = 0;
        const char *name = c->name[j];
        cli_num k = cli_strtod(text, &end, &x);
        if (k == CLI_NUM_OK && *end)
            k = CLI_NUM_BAD;
        if (k != CLI_NUM_OK) {
            snprintf(err, errlen, "%s:%lld: column '%s': '%s' %s", c->path, (long long)c->lineno, name, text,
                     cli_num_why(k));
            return 0;
        }
        if (x < 0 && !pfr_cli_negative_allowed(c->m, c->param[j])) {
            snprintf(err, errlen, "%s:%lld: column '%s': %s: a parameter cannot be negative unless %s declares a "
                     "negative lower bound for it", c->path, (long long)c->lineno, name, text,
                     remat_mechanism_source(c->m));
            return 0;
        }
        double lo = remat_mechanism_param_lo(c->m, c->param[j]), hi = remat_mechanism_param_hi(c->m, c->param[j]);
        if (x < lo || x > hi) {
            snprintf(err, errlen, "%s:%lld: column '%s': %s is outside the bounds [%g, %g] that %s declares for it",
                     c->path, (long long)c->lineno, name, text, lo, hi, remat_mechanism_source(c->m));
            return 0;
        }
        v[j] = x;
        p = comma ? comma + 1 : p;
    }
    return 1;
}

int64_t ens_csv_read(ens_csv *c, int64_t n, double *sets, int64_t *lines, char *err, size_t errlen)
{
    int64_t k = 0;
    while (k < n) {
        int r = next_line(c, err, errlen);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        if (blank(c->line))
            continue;
        if (!parse_row(c, sets + (size_t)k * (size_t)c->ncol, err, errlen))
            return -1;
        if (lines)
            lines[k] = c->lineno;
        k++;
    }
    return k;
}

void ens_csv_close(ens_csv *c)
{
    if (c->f)
        fclose(c->f);
    for (int j = 0; c->name && j < c->ncol; j++)
        free(c->name[j]);
    free(c->name);
    free(c->param);
    free(c->line);
    memset(c, 0, sizeof *c);
}
