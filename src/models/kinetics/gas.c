/* gas.c — remat/gas.h's entry points: which format a file has, reading it,
 * and the initial state from T and a composition. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "models/kinetics/gas_impl.h"

/* rmi_read_file with a terminating NUL and a check that there is no other */
static remat_status read_text(const char *path, const char *what, char **text, size_t *n)
{
    remat_status st = rmi_read_file(path, what, text, n);
    if (st != REMAT_OK)
        return st;
    char *t = rmi_realloc(*text, *n + 1);
    if (!t) {
        rmi_free(*text);
        *text = NULL;
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", path);
    }
    t[*n] = 0;
    *text = t;
    if (memchr(t, 0, *n)) {
        int line = 1;
        for (const char *p = t; *p; p++)
            line += *p == '\n';
        rmi_free(t);
        *text = NULL;
        return rmi_error(REMAT_ERR_PARSE, "%s:%d: a NUL byte: not a text file", path, line);
    }
    return REMAT_OK;
}

/* a CHEMKIN section keyword starting the line: upper case as CHEMKIN files
 * write them (a .mech file's "species A, B" is not one), then the end of
 * the line or a blank, and no "->", "<=>" or ':' on the line (a .mech
 * reaction whose first species is named REAC is not one either) */
static int starts_word(const char *p, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(p, w, n) != 0 || (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\r' && p[n] != '\n' && p[n] != '!'))
        return 0;
    size_t len = strcspn(p, "\n");
    for (size_t i = 0; i < len; i++)
        if (p[i] == ':' || (p[i] == '-' && p[i + 1] == '>') || (p[i] == '<' && p[i + 1] == '='))
            return 0;
    return 1;
}

remat_gas_format remat_gas_sniff(const char *text)
{
    static const char *const yaml_keys[] = {"phases:", "species:", "units:", "description:", "generator:",
                                            "reactions:", "cantera-version:", NULL};
    static const char *const ck_keys[] = {"ELEMENTS", "ELEM", "SPECIES", "SPEC", "THERMO", "REACTIONS", "REAC", NULL};
    if (!text)
        return REMAT_GAS_FORMAT_NONE;
    for (const char *p = text; *p;) {
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (q == p) { /* top level only */
            for (int i = 0; yaml_keys[i]; i++)
                if (strncmp(p, yaml_keys[i], strlen(yaml_keys[i])) == 0)
                    return REMAT_GAS_FORMAT_YAML;
        }
        for (int i = 0; ck_keys[i]; i++)
            if (starts_word(q, ck_keys[i]))
                return REMAT_GAS_FORMAT_CHEMKIN;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    return REMAT_GAS_FORMAT_NONE;
}

remat_gas_format remat_gas_sniff_file(const char *path)
{
    struct stat sb;
    /* only a regular file: opening a FIFO would wait for a writer (the
     * mechanism reader then names what it is) */
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return REMAT_GAS_FORMAT_NONE;
    FILE *f = fopen(path, "rb");
    if (!f)
        return REMAT_GAS_FORMAT_NONE;
    char *buf = rmi_malloc(65537);
    remat_gas_format k = REMAT_GAS_FORMAT_NONE;
    if (buf) {
        size_t n = fread(buf, 1, 65536, f);
        buf[n] = 0;
        if (strlen(buf) == n) /* no NUL inside */
            k = remat_gas_sniff(buf);
        rmi_free(buf);
    }
    fclose(f);
    return k;
}

remat_status remat_gas_read(const char *path, const remat_gas_options *opt, remat_mechanism **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_gas_read: out is NULL");
    *out = NULL;
    if (!path)
        return rmi_error(REMAT_ERR_NULL, "remat_gas_read: path is NULL");
    remat_gas_options o = opt ? *opt : (remat_gas_options){0};
    if (o.energy != REMAT_GAS_ADIABATIC && o.energy != REMAT_GAS_ISOTHERMAL)
        return rmi_error(REMAT_ERR_ARG, "remat_gas_read: energy %d is neither adiabatic nor isothermal",
                         (int)o.energy);
    char *text = NULL, *thermo = NULL;
    size_t n = 0, nt = 0;
    remat_status st = read_text(path, "mechanism file", &text, &n);
    if (st != REMAT_OK)
        return st;
    gas_desc d = {.file = path};
    remat_gas_format fmt = remat_gas_sniff(text);
    if (fmt == REMAT_GAS_FORMAT_YAML) {
        if (o.thermo)
            st = rmi_error(REMAT_ERR_ARG, "%s: a thermo file is for CHEMKIN input; this is a Cantera YAML file", path);
        else
            st = gas_read_yaml(&d, text, n, &o);
    } else if (fmt == REMAT_GAS_FORMAT_CHEMKIN) {
        if (o.thermo)
            st = read_text(o.thermo, "thermo file", &thermo, &nt);
        if (st == REMAT_OK)
            st = gas_read_chemkin(&d, text, n, o.thermo, thermo, nt);
    } else {
        st = rmi_error(REMAT_ERR_PARSE,
                       "%s:1: neither a Cantera YAML file (no top-level 'phases:', 'species:' or 'units:') nor a "
                       "CHEMKIN file (no ELEMENTS, SPECIES, THERMO or REACTIONS line)",
                       path);
    }
    if (st == REMAT_OK)
        st = gas_check_duplicates(&d, fmt == REMAT_GAS_FORMAT_YAML ? "'duplicate: true'" : "DUPLICATE");
    if (st == REMAT_OK)
        st = gas_check_balance(&d);
    if (st == REMAT_OK)
        st = gas_build(&d, &o, out);
    rmi_arena_clear(&d.arena);
    rmi_free(text);
    rmi_free(thermo);
    return st;
}

int remat_gas_species_count(const remat_mechanism *m)
{
    if (!m) {
        rmi_error(REMAT_ERR_NULL, "remat_gas_species_count: m is NULL");
        return 0;
    }
    return m->ngas;
}

remat_status remat_gas_jacobian(remat_fn *f, const remat_mechanism *m, remat_val y, remat_val params,
                                remat_val *J, remat_val *dydt)
{
    if (!f || !m || !J || !dydt)
        return rmi_error(REMAT_ERR_NULL, "remat_gas_jacobian: %s is NULL", !f ? "f" : !m ? "m" : !J ? "J" : "dydt");
    *J = *dydt = REMAT_NONE;
    const gas_plan *g = m->gas_plan;
    if (!g || !g->vec)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "remat_gas_jacobian: %s has no vector form (not a gas mechanism, "
                         "or PLOG or non-integer orders)", remat_mechanism_source(m));
    int n = remat_fn_num_nodes(f);
    if (y < 0 || y >= n || params < 0 || params >= n)
        return rmi_error(REMAT_ERR_ARG, "remat_gas_jacobian: y or params is not a value of function '%s'",
                         remat_fn_name(f));
    remat_shape ys = remat_val_shape(f, y), ps = remat_val_shape(f, params);
    if (remat_val_dtype(f, y) != REMAT_F64 || remat_val_dtype(f, params) != REMAT_F64 || ys.rank != 1 ||
        ys.dims[0] != g->K + 1 || ps.rank != 1 || ps.dims[0] != remat_mechanism_input_count(m))
        return rmi_error(REMAT_ERR_UNSUPPORTED, "remat_gas_jacobian: y must be f64 (%d,) and params f64 (%d,)",
                         g->K + 1, remat_mechanism_input_count(m));
    return gas_lower_jac(f, g, y, params, J, dydt);
}

remat_status remat_gas_state(const remat_mechanism *m, double T, const char *composition, double y[])
{
    if (!m || !composition || !y)
        return rmi_error(REMAT_ERR_NULL, "remat_gas_state: %s is NULL", !m ? "m" : !composition ? "composition" : "y");
    int K = m->ngas;
    if (K == 0)
        return rmi_error(REMAT_ERR_ARG, "remat_gas_state: %s is not a gas mechanism", m->source);
    if (!(T > 0) || !isfinite(T))
        return rmi_error(REMAT_ERR_VALUE, "remat_gas_state: temperature %g K must be positive and finite", T);
    double *x = rmi_calloc((size_t)K, sizeof *x);
    if (!x)
        return rmi_error(REMAT_ERR_NOMEM, "remat_gas_state: out of memory");
    const char *p = composition;
    double total = 0;
    remat_status st = REMAT_OK;
    while (*p && st == REMAT_OK) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (!eq) {
            st = rmi_error(REMAT_ERR_VALUE, "composition '%.*s': expected SPECIES=AMOUNT", (int)len, p);
            break;
        }
        size_t nl = (size_t)(eq - p);
        while (nl && p[nl - 1] == ' ')
            nl--;
        const char *nm = p;
        while (nl && *nm == ' ')
            nm++, nl--;
        int k = -1;
        for (int i = 0; i < K && k < 0; i++)
            if (strlen(m->species[i]) == nl && strncmp(m->species[i], nm, nl) == 0)
                k = i;
        char num[64];
        size_t vl = len - (size_t)(eq + 1 - p);
        snprintf(num, sizeof num, "%.*s", (int)(vl < 63 ? vl : 63), eq + 1);
        char *end;
        double v = strtod(num, &end);
        while (*end == ' ')
            end++;
        if (k < 0)
            st = rmi_error(REMAT_ERR_VALUE, "composition: '%.*s' is not a gas species of %s", (int)nl, nm,
                           m->source);
        else if (end == num || *end || !(v >= 0) || !isfinite(v))
            st = rmi_error(REMAT_ERR_VALUE, "composition: %.*s: '%s' is not an amount >= 0", (int)nl, nm, num);
        else {
            x[k] += v;
            total += v;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (st == REMAT_OK && !(total > 0))
        st = rmi_error(REMAT_ERR_VALUE, "composition '%s': the amounts sum to 0", composition);
    if (st == REMAT_OK) {
        for (int k = 0; k < K; k++)
            y[k] = x[k] / total;
        y[K] = T;
    }
    rmi_free(x);
    return st;
}
