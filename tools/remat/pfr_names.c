/*
 * pfr_names.c — --free/--fix and --cond lists read against a mechanism
 * (pfr_names.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"
#include "pfr_names.h"

void pfr_names_cond_list(const remat_mechanism *m, char *buf, int len)
{
    int n = remat_mechanism_cond_count(m), o = 0;
    buf[0] = '\0';
    if (n == 0)
        snprintf(buf, (size_t)len, "none: declare one with 'cond NAME = DEFAULT'");
    for (int i = 0; i < n && o < len - 8; i++)
        o += snprintf(buf + o, (size_t)(len - o), "%s%s", i ? ", " : "", remat_mechanism_cond_name(m, i));
}

/* What else name is in m, for a message: " (it is a species)" or "". */
static const char *other_kind(const remat_mechanism *m, const char *name)
{
    if (remat_mechanism_species_find(m, name) >= 0)
        return " (it is a species)";
    if (remat_mechanism_param_find(m, name) >= 0)
        return " (it is a parameter)";
    if (remat_mechanism_cond_find(m, name) >= 0)
        return " (it is a condition: set it with --cond or a data file's '# NAME = VALUE')";
    return "";
}

/* The parameters whose names start with prefix then '.' or '[' ("f",
 * "f.Dense_0", "f.Dense_0.kernel": a network's weights, remat/mechanism.h
 * "Networks") set in flags and seen: their count, -1 if one was seen
 * already, 0 if none matches. */
static int select_group(const remat_mechanism *m, const char *prefix, char *seen, bool *flags)
{
    size_t n = strlen(prefix);
    int count = 0, twice = 0;
    for (int i = 0; i < remat_mechanism_param_count(m); i++) {
        const char *name = remat_mechanism_param_name(m, i);
        if (strncmp(name, prefix, n) != 0 || (name[n] != '.' && name[n] != '['))
            continue;
        twice |= seen[i];
        seen[i] = 1;
        flags[i] = true;
        count++;
    }
    return twice ? -1 : count;
}

int pfr_names_params(const char *opt, const char *text, const remat_mechanism *m, bool *flags)
{
    int n = remat_mechanism_param_count(m), ok = 1;
    char names[1024];
    pfr_cli_names(m, 1, names, sizeof names);
    char *seen = calloc((size_t)n + 1, 1), *copy = strdup(text);
    if (!seen || !copy) {
        fprintf(stderr, "remat: %s: out of memory\n", opt);
        ok = 0;
    }
    for (char *p = copy; ok;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        int i = *p ? remat_mechanism_param_find(m, p) : -1;
        int group = i < 0 && *p ? select_group(m, p, seen, flags) : 0;
        if (group > 0) {
            /* a network's name or a prefix of its weights' names: every weight under it */
        } else if (group < 0) {
            fprintf(stderr, "remat: %s: '%s' names a weight given twice\n", opt, p);
            ok = 0;
        } else if (!*p) {
            fprintf(stderr, "remat: %s: an empty name in '%s' (give parameter names: %s)\n", opt, text, names);
            ok = 0;
        } else if (i < 0) {
            fprintf(stderr, "remat: %s: '%s' is not a parameter of %s%s (parameters: %s)\n", opt, p,
                    remat_mechanism_source(m), other_kind(m, p), names);
            ok = 0;
        } else if (seen[i]) {
            fprintf(stderr, "remat: %s: '%s' is given twice\n", opt, p);
            ok = 0;
        } else {
            seen[i] = 1;
            flags[i] = true;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    free(seen);
    free(copy);
    return ok;
}

int pfr_names_conds(const char *opt, const char *text, const remat_mechanism *m, double *values)
{
    int n = remat_mechanism_cond_count(m), ok = 1;
    char names[1024];
    pfr_names_cond_list(m, names, sizeof names);
    char *seen = calloc((size_t)n + 1, 1), *copy = strdup(text);
    if (!seen || !copy) {
        fprintf(stderr, "remat: %s: out of memory\n", opt);
        ok = 0;
    }
    for (char *p = copy; ok;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        char *eq = strchr(p, '=');
        const char *c = p;
        if (isalpha((unsigned char)*c) || *c == '_')
            while (isalnum((unsigned char)*c) || *c == '_')
                c++;
        if (!eq || c == p || c != eq || !eq[1]) {
            fprintf(stderr, "remat: %s: '%s' is not NAME=VALUE (e.g. %s T=350)\n", opt, p, opt);
            ok = 0;
            break;
        }
        *eq = '\0';
        int i = remat_mechanism_cond_find(m, p);
        const char *end;
        double v = 0;
        cli_num k = i >= 0 ? cli_strtod(eq + 1, &end, &v) : CLI_NUM_OK;
        if (k == CLI_NUM_OK && i >= 0 && *end)
            k = CLI_NUM_BAD;
        if (i < 0) {
            fprintf(stderr, "remat: %s: '%s' is not a condition of %s%s (conditions: %s)\n", opt, p,
                    remat_mechanism_source(m), other_kind(m, p), names);
            ok = 0;
        } else if (seen[i]) {
            fprintf(stderr, "remat: %s: '%s' is given twice\n", opt, p);
            ok = 0;
        } else if (k != CLI_NUM_OK) {
            fprintf(stderr, "remat: %s: %s=%s: '%s' %s\n", opt, p, eq + 1, eq + 1, cli_num_why(k));
            ok = 0;
        } else {
            seen[i] = 1;
            values[i] = v;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    free(seen);
    free(copy);
    return ok;
}

void pfr_names_warnings(const remat_mechanism *m)
{
    for (int i = 0; i < remat_mechanism_warning_count(m); i++)
        fprintf(stderr, "remat: %s\n", remat_mechanism_warning(m, i));
}
