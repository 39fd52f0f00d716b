/*
 * schedule_spec.c — the text form of a schedule spec, as the CLI and config
 * files spell it: "store-all", "per-step", "periodic:K", "two-level",
 * "two-level:K", "binomial:S", "online:S".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "remat/schedule.h"

#define EXPECTED "store-all, per-step, periodic:K, two-level, two-level:K, binomial:S, online:S, two-tier:S:D[:W:R]"

typedef enum { PARAM_NONE, PARAM_OPTIONAL, PARAM_REQUIRED } param_rule;

static const struct {
    const char *name;
    remat_schedule_kind kind;
    param_rule rule;
    const char *what; /* what the number means, for messages */
} names[] = {
    {"store-all", REMAT_SCHED_STORE_ALL, PARAM_NONE, NULL},
    {"per-step", REMAT_SCHED_PER_STEP, PARAM_NONE, NULL},
    {"periodic", REMAT_SCHED_PERIODIC, PARAM_REQUIRED, "period"},
    {"two-level", REMAT_SCHED_TWO_LEVEL, PARAM_OPTIONAL, "period"},
    {"binomial", REMAT_SCHED_BINOMIAL, PARAM_REQUIRED, "snapshots"},
    {"online", REMAT_SCHED_ONLINE, PARAM_REQUIRED, "snapshots"},
    {"two-tier", REMAT_SCHED_TWO_TIER, PARAM_REQUIRED, "slots"},
};

/* A positive decimal integer, digits only (no sign, no blanks). */
static int parse_count(const char *p, int64_t *out)
{
    if (*p < '0' || *p > '9')
        return -1;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return -1;
    errno = 0;
    long long v = strtoll(p, NULL, 10);
    if (errno == ERANGE)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* "S:D" or "S:D:W:R" after "two-tier:" (colons: lists of schedules are comma-separated) */
static remat_status parse_two_tier(const char *text, const char *p, remat_schedule_spec *out)
{
    char buf[128];
    if (strlen(p) >= sizeof buf)
        return rmi_error(REMAT_ERR_PARSE, "schedule '%s': too long", text);
    strcpy(buf, p);
    char *f[5];
    int nf = 0;
    for (char *q = buf, *c; nf < 5; q = c + 1) {
        f[nf++] = q;
        if (!(c = strchr(q, ':')))
            break;
        *c = 0;
    }
    if (nf != 2 && nf != 4)
        return rmi_error(REMAT_ERR_PARSE, "schedule '%s': expected two-tier:S:D or two-tier:S:D:W:R", text);
    int64_t v[2];
    for (int i = 0; i < 2; i++)
        if (parse_count(f[i], &v[i]) != 0)
            return rmi_error(REMAT_ERR_PARSE, "schedule '%s': %s '%s' is not a whole number", text,
                             i ? "disk slots" : "RAM slots", f[i]);
    double c[2] = {1, 1};
    for (int i = 0; nf == 4 && i < 2; i++) {
        char *end;
        errno = 0;
        c[i] = strtod(f[2 + i], &end);
        if (end == f[2 + i] || *end || errno == ERANGE || !(c[i] >= 0))
            return rmi_error(REMAT_ERR_PARSE, "schedule '%s': %s cost '%s' is not a number >= 0", text,
                             i ? "read" : "write", f[2 + i]);
    }
    if (v[0] + v[1] < 1)
        return rmi_error(REMAT_ERR_ARG, "%s: at least one slot", text);
    *out = (remat_schedule_spec){.kind = REMAT_SCHED_TWO_TIER, .snapshots = v[0], .disk_snapshots = v[1],
                                 .disk_write = c[0], .disk_read = c[1]};
    return REMAT_OK;
}


remat_status remat_schedule_parse(const char *text, remat_schedule_spec *spec)
{
    if (!text || !spec)
        return rmi_error(REMAT_ERR_NULL, "remat_schedule_parse: NULL %s", text ? "spec" : "text");
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) != len || strncmp(text, names[i].name, len) != 0)
            continue;
        remat_schedule_spec out = {.kind = names[i].kind};
        if (!colon) {
            if (names[i].rule == PARAM_REQUIRED)
                return rmi_error(REMAT_ERR_PARSE, "schedule '%s': missing %s (write %s:N)",
                                 text, names[i].what, names[i].name);
            *spec = out;
            return REMAT_OK;
        }
        if (names[i].rule == PARAM_NONE)
            return rmi_error(REMAT_ERR_PARSE, "schedule '%s': %s takes no parameter", text,
                             names[i].name);
        if (out.kind == REMAT_SCHED_TWO_TIER) {
            remat_status st = parse_two_tier(text, colon + 1, &out);
            if (st == REMAT_OK)
                *spec = out;
            return st;
        }
        int64_t v;
        if (parse_count(colon + 1, &v) != 0)
            return rmi_error(REMAT_ERR_PARSE, "schedule '%s': %s '%s' is not a whole number",
                             text, names[i].what, colon + 1);
        if (v < 1)
            return rmi_error(REMAT_ERR_ARG, "%s: %s must be >= 1", text, names[i].what);
        if (out.kind == REMAT_SCHED_BINOMIAL || out.kind == REMAT_SCHED_ONLINE)
            out.snapshots = v;
        else
            out.period = v;
        *spec = out;
        return REMAT_OK;
    }
    return rmi_error(REMAT_ERR_PARSE, "unknown schedule '%s' (expected " EXPECTED ")", text);
}

static void shortest(char *out, double v)
{
    snprintf(out, 32, "%.15g", v);
    if (strtod(out, NULL) != v)
        snprintf(out, 32, "%.17g", v);
}

void remat_schedule_format(const remat_schedule_spec *spec, char *buf, int len)
{
    REMAT_NULL_RETURN(buf, );
    if (len <= 0)
        return;
    if (!spec)
        snprintf(buf, (size_t)len, "(null)");
    REMAT_NULL_RETURN(spec, );
    long long p = (long long)spec->period, s = (long long)spec->snapshots;
    switch (spec->kind) {
    case REMAT_SCHED_STORE_ALL: snprintf(buf, (size_t)len, "store-all"); return;
    case REMAT_SCHED_PER_STEP: snprintf(buf, (size_t)len, "per-step"); return;
    case REMAT_SCHED_PERIODIC: snprintf(buf, (size_t)len, "periodic:%lld", p); return;
    case REMAT_SCHED_TWO_LEVEL:
        if (spec->period == 0)
            snprintf(buf, (size_t)len, "two-level");
        else
            snprintf(buf, (size_t)len, "two-level:%lld", p);
        return;
    case REMAT_SCHED_BINOMIAL: snprintf(buf, (size_t)len, "binomial:%lld", s); return;
    case REMAT_SCHED_ONLINE: snprintf(buf, (size_t)len, "online:%lld", s); return;
    case REMAT_SCHED_TWO_TIER: { /* the shortest of %.15g / %.17g that parse gives back */
        char w[32], r[32];
        shortest(w, spec->disk_write);
        shortest(r, spec->disk_read);
        snprintf(buf, (size_t)len, "two-tier:%lld:%lld:%s:%s", s, (long long)spec->disk_snapshots, w, r);
        return;
    }
    case REMAT_SCHED_KIND_COUNT: break;
    }
    snprintf(buf, (size_t)len, "unknown-schedule-%d", (int)spec->kind);
}
