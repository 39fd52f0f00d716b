/* mechanism.c — parse entry points, freeing, accessors. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/file.h"
#include "models/kinetics/mechanism_impl.h"
#include "remat/gas.h"

static remat_status parse_text(const char *src, size_t n, const char *name, remat_mechanism **out)
{
    remat_status st;
    /* a UTF-8 byte-order mark, as editors on Windows write (the CSV reader
     * skips it too); columns on line 1 count from after it, as editors show */
    if (n >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) {
        src += 3;
        n -= 3;
    }
    remat_mechanism *m = rmi_calloc(1, sizeof *m);
    if (!m)
        return rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", name);
    mech_parser p = {.m = m};
    if (!(m->source = rmi_arena_strndup(&m->arena, name, strlen(name)))) {
        st = rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    p.file = m->source;
    if ((st = mech_check_text(p.file, src, n)) != REMAT_OK)
        goto fail;
    mech_lex_init(&p.lx, p.file, src, n);
    if ((st = mech_parse_lines(&p)) != REMAT_OK || (st = mech_finish_names(&p)) != REMAT_OK ||
        (st = mech_resolve(&p)) != REMAT_OK || (st = mech_build_rhs(&p)) != REMAT_OK)
        goto fail;
    mech_names_release(&p.names);
    rmi_free(p.terms);
    *out = m;
    return REMAT_OK;
fail:
    mech_names_release(&p.names);
    rmi_free(p.terms);
    remat_mechanism_free(m);
    return st;
}

remat_status remat_mechanism_parse_string(const char *text, const char *name_for_errors,
                                          remat_mechanism **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_mechanism_parse_string: out is NULL");
    *out = NULL;
    if (!text)
        return rmi_error(REMAT_ERR_NULL, "remat_mechanism_parse_string: text is NULL");
    return parse_text(text, strlen(text), name_for_errors ? name_for_errors : "<string>", out);
}

/* a parse error in a file of another format says so (remat/gas.h reads it) */
static remat_status hint_format(remat_status st, const char *text, size_t n)
{
    char head[4097];
    size_t k = n < 4096 ? n : 4096;
    memcpy(head, text, k);
    head[k] = 0;
    remat_gas_format f = remat_gas_sniff(head);
    if (f == REMAT_GAS_FORMAT_NONE)
        return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", remat_last_error());
    return rmi_error(st, "%s (this looks like a %s file: read it with remat_gas_read, as `remat pfr` does for such "
                         "files)",
                     msg, f == REMAT_GAS_FORMAT_YAML ? "Cantera YAML" : "CHEMKIN");
}

remat_status remat_mechanism_parse_file(const char *path, remat_mechanism **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_mechanism_parse_file: out is NULL");
    *out = NULL;
    if (!path)
        return rmi_error(REMAT_ERR_NULL, "remat_mechanism_parse_file: path is NULL");
    char *text = NULL;
    size_t n = 0;
    remat_status st = rmi_read_file(path, "mechanism file", &text, &n);
    if (st == REMAT_OK)
        st = parse_text(text, n, path, out);
    if (st == REMAT_ERR_PARSE)
        st = hint_format(st, text, n);
    rmi_free(text);
    return st;
}

void remat_mechanism_free(remat_mechanism *m)
{
    if (!m)
        return;
    rmi_free(m->warnings);
    mech_nets_release(m);
    rmi_arena_clear(&m->arena);
    rmi_free(m);
}

/* ---- accessors ---- */

/* A NULL mechanism: the accessor returns its documented value and this sets
 * remat_last_error() naming it; 1 when m is NULL. */
static int null_mech(const remat_mechanism *m, const char *fn)
{
    if (m)
        return 0;
    rmi_error(REMAT_ERR_NULL, "%s: mechanism is NULL", fn);
    return 1;
}
#define NULL_MECH(m, value)                                                                                     \
    do {                                                                                                      \
        if (null_mech((m), __func__))                                                                         \
            return value;                                                                                     \
    } while (0)

const char *remat_mechanism_source(const remat_mechanism *m)
{
    NULL_MECH(m, NULL);
    return m->source;
}

const char *remat_mechanism_indep_name(const remat_mechanism *m)
{
    NULL_MECH(m, NULL);
    return m->indep;
}

int remat_mechanism_species_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nspecies;
}

const char *remat_mechanism_species_name(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nspecies);
    return m->species[i];
}

int remat_mechanism_species_find(const remat_mechanism *m, const char *name)
{
    NULL_MECH(m, -1);
    for (int i = 0; name && i < m->nspecies; i++)
        if (strcmp(m->species[i], name) == 0)
            return i;
    return -1;
}

int remat_mechanism_param_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nparams;
}

static const mech_param *param(const remat_mechanism *m, int i)
{
    REMAT_ASSERT(i >= 0 && i < m->nparams);
    return &m->params[i];
}

const char *remat_mechanism_param_name(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    return param(m, i)->name;
}

double remat_mechanism_param_value(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NAN);
    return param(m, i)->value;
}

double remat_mechanism_param_lo(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NAN);
    return param(m, i)->lo;
}

double remat_mechanism_param_hi(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NAN);
    return param(m, i)->hi;
}

int remat_mechanism_param_find(const remat_mechanism *m, const char *name)
{
    NULL_MECH(m, -1);
    for (int i = 0; name && i < m->nparams; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return i;
    return -1;
}

void remat_mechanism_param_values(const remat_mechanism *m, double values[])
{
    NULL_MECH(m, );
    if (!values && m->nparams > 0) {
        rmi_error(REMAT_ERR_NULL, "remat_mechanism_param_values: values is NULL");
        return;
    }
    for (int i = 0; i < m->nparams; i++)
        values[i] = m->params[i].value;
}

int remat_mechanism_warning_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nwarnings;
}

const char *remat_mechanism_warning(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nwarnings);
    return m->warnings[i];
}

int remat_mechanism_net_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nnets;
}

const char *remat_mechanism_net_name(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nnets);
    return m->nets[i].name;
}

int remat_mechanism_param_net(const remat_mechanism *m, int i)
{
    NULL_MECH(m, -1);
    REMAT_ASSERT(i >= 0 && i < m->nparams);
    for (int k = 0; k < m->nnets; k++)
        if (i >= m->nets[k].first_param && i < m->nets[k].first_param + m->nets[k].nweights)
            return k;
    return -1;
}

int remat_mechanism_cond_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nconds;
}

const char *remat_mechanism_cond_name(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nconds);
    return m->cond_names[i];
}

double remat_mechanism_cond_value(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NAN);
    REMAT_ASSERT(i >= 0 && i < m->nconds);
    return m->cond_values[i];
}

int remat_mechanism_cond_find(const remat_mechanism *m, const char *name)
{
    NULL_MECH(m, -1);
    for (int i = 0; name && i < m->nconds; i++)
        if (strcmp(m->cond_names[i], name) == 0)
            return i;
    return -1;
}

int remat_mechanism_input_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nparams + m->nconds;
}

int remat_mechanism_const_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nconsts;
}

const char *remat_mechanism_const_name(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nconsts);
    return m->const_names[i];
}

double remat_mechanism_const_value(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NAN);
    REMAT_ASSERT(i >= 0 && i < m->nconsts);
    return m->const_values[i];
}

int remat_mechanism_let_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nlets;
}

const char *remat_mechanism_let_name(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nlets);
    return m->let_names[i];
}

const remat_expr *remat_mechanism_let_expr(const remat_mechanism *m, int i)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(i >= 0 && i < m->nlets);
    return m->lets[i];
}

const remat_expr *remat_mechanism_rhs(const remat_mechanism *m, int species)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(species >= 0 && species < m->nspecies);
    return m->rhs[species];
}

int remat_mechanism_reaction_count(const remat_mechanism *m)
{
    NULL_MECH(m, 0);
    return m->nreactions;
}

const remat_expr *remat_mechanism_reaction_rate(const remat_mechanism *m, int r)
{
    NULL_MECH(m, NULL);
    REMAT_ASSERT(r >= 0 && r < m->nreactions);
    return m->reactions[r].rate;
}

double remat_mechanism_reaction_stoich(const remat_mechanism *m, int r, int s)
{
    NULL_MECH(m, NAN);
    REMAT_ASSERT(r >= 0 && r < m->nreactions && s >= 0 && s < m->nspecies);
    const mech_reaction *rx = &m->reactions[r];
    for (int i = 0; i < rx->nstoich; i++) /* a reaction changes a few species: a scan */
        if (rx->stoich[i].species == s)
            return rx->stoich[i].nu;
    return 0.0;
}

int remat_mechanism_control_knots(const remat_mechanism *m, double z[], int cap)
{
    NULL_MECH(m, 0);
    if (cap > 0 && !z) {
        rmi_error(REMAT_ERR_NULL, "remat_mechanism_control_knots: z is NULL");
        return 0;
    }
    for (int i = 0; i < m->nknots && i < cap; i++)
        z[i] = m->knots[i];
    return m->nknots;
}

int remat_mechanism_reaction_line(const remat_mechanism *m, int r)
{
    NULL_MECH(m, -1);
    REMAT_ASSERT(r >= 0 && r < m->nreactions);
    return m->reactions[r].line;
}
