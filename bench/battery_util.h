/*
 * battery_util.h — loading one problem of the fitting battery (bench/battery/):
 * its mechanism, its data, and the reported optimum written in the
 * mechanism's comments. Shared by bench_battery.c and tests/test_battery.c.
 *
 * A battery mechanism carries machine-read comment lines:
 *   # @data pinene.csv                 the experiment (next to the .mech)
 *   # @sse 19.872                      the reported least-squares objective
 *   # @optimum k1=5.9256e-5 k2=...     the reported parameters (optional)
 * A problem needs @data and at least one of @sse and @optimum.
 *
 *   battery_problem b;
 *   if (battery_load("bench/battery/pinene.mech", &b, err, sizeof err)) fail(err);
 *   ... b.mech, b.data, b.reported_sse, b.optimum (NULL without @optimum) ...
 *   battery_free(&b);
 *
 * Header-only (static inline), like bench_util.h.
 */
#ifndef REMAT_BATTERY_UTIL_H
#define REMAT_BATTERY_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

typedef struct {
    char name[128];         /* file name without .mech */
    remat_mechanism *mech;
    remat_dataset *data;
    double reported_sse;    /* NaN without @sse */
    double *optimum;        /* [param_count] or NULL without @optimum */
} battery_problem;

static inline void battery_free(battery_problem *b)
{
    remat_dataset_free(b->data);
    remat_mechanism_free(b->mech);
    free(b->optimum);
    memset(b, 0, sizeof *b);
}

/* "k1=5.9e-5 k2=3e-5" into optimum[] by the mechanism's parameter names;
 * every parameter must be named. Returns 0 or writes err. */
static inline int battery_parse_optimum(battery_problem *b, const char *text, const char *path, char *err,
                                        size_t len)
{
    int P = remat_mechanism_param_count(b->mech);
    b->optimum = malloc(sizeof *b->optimum * (size_t)(P ? P : 1));
    if (!b->optimum)
        return snprintf(err, len, "%.200s: out of memory", path), 1;
    for (int i = 0; i < P; i++)
        b->optimum[i] = NAN;
    const char *s = text;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '\n' || *s == '\r')
            break;
        const char *eq = strchr(s, '=');
        if (!eq)
            return snprintf(err, len, "%.200s: @optimum: expected NAME=VALUE at '%.60s'", path, s), 1;
        char name[64];
        size_t n = (size_t)(eq - s);
        if (n == 0 || n >= sizeof name)
            return snprintf(err, len, "%.200s: @optimum: bad name at '%.60s'", path, s), 1;
        memcpy(name, s, n);
        name[n] = '\0';
        int i = remat_mechanism_param_find(b->mech, name);
        if (i < 0)
            return snprintf(err, len, "%.200s: @optimum names '%s', which is no parameter", path, name), 1;
        char *end;
        b->optimum[i] = strtod(eq + 1, &end);
        if (end == eq + 1)
            return snprintf(err, len, "%.200s: @optimum: '%s' has no number", path, name), 1;
        s = end;
    }
    for (int i = 0; i < P; i++)
        if (isnan(b->optimum[i]))
            return snprintf(err, len, "%.200s: @optimum has no value for '%s'", path,
                            remat_mechanism_param_name(b->mech, i)),
                   1;
    return 0;
}

/* Loads path (a .mech of the battery). Returns 0, or 1 with a message in err
 * (the problem is then freed). */
static inline int battery_load(const char *path, battery_problem *b, char *err, size_t len)
{
    memset(b, 0, sizeof *b);
    b->reported_sse = NAN;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(b->name, sizeof b->name, "%.*s", (int)strcspn(base, "."), base);
    if (remat_mechanism_parse_file(path, &b->mech) != REMAT_OK)
        return snprintf(err, len, "%s", remat_last_error()), 1;

    FILE *f = fopen(path, "r");
    if (!f)
        return snprintf(err, len, "%.200s: cannot open", path), battery_free(b), 1;
    char line[1024], data[512] = "", optimum[1024] = "";
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "# @data ", 8) == 0)
            sscanf(line + 8, "%511s", data);
        else if (strncmp(line, "# @sse ", 7) == 0)
            b->reported_sse = strtod(line + 7, NULL);
        else if (strncmp(line, "# @optimum ", 11) == 0)
            snprintf(optimum, sizeof optimum, "%s", line + 11);
    }
    fclose(f);
    if (!data[0])
        return snprintf(err, len, "%.200s: no '# @data FILE' line", path), battery_free(b), 1;
    if (isnan(b->reported_sse) && !optimum[0])
        return snprintf(err, len, "%.200s: neither '# @sse' nor '# @optimum'", path), battery_free(b), 1;
    if (optimum[0] && battery_parse_optimum(b, optimum, path, err, len))
        return battery_free(b), 1;

    char csv[1024];
    snprintf(csv, sizeof csv, "%.*s%s", (int)(base - path), path, data);
    if (remat_dataset_read(csv, b->mech, &b->data) != REMAT_OK)
        return snprintf(err, len, "%s", remat_last_error()), battery_free(b), 1;
    return 0;
}

/* The objective at params under the integration options o (one experiment). */
static inline int battery_sse(const battery_problem *b, const remat_fit_options *o, const double *params,
                              double *sse)
{
    remat_fit *fit;
    remat_dataset *d[1] = {b->data};
    if (remat_fit_new(b->mech, 1, d, o, &fit) != REMAT_OK)
        return 1;
    remat_status st = remat_fit_objective(fit, params, sse);
    remat_fit_free(fit);
    return st != REMAT_OK;
}

/* The objective the battery asks a fit to reach: the reported SSE, or the
 * SSE at the reported parameters (under o) when that is lower (the reported
 * SSE is rounded) or when no SSE was reported. NaN on failure. */
static inline double battery_target(const battery_problem *b, const remat_fit_options *o)
{
    double at = NAN;
    if (b->optimum && battery_sse(b, o, b->optimum, &at))
        return NAN;
    if (isnan(b->reported_sse))
        return at;
    return isnan(at) ? b->reported_sse : fmin(at, b->reported_sse);
}

#endif
