/* names.c — the parser's name table and expression node allocation (in the mechanism's arena). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "models/kinetics/mechanism_impl.h"

remat_expr *mech_node(remat_arena *a, remat_expr_kind kind, int line, int col)
{
    remat_expr *e = rmi_arena_alloc(a, sizeof *e);
    if (e) {
        e->kind = kind;
        e->index = -1;
        e->line = line;
        e->col = col;
    }
    return e;
}

/* ---- name table: open addressing over an insertion-ordered array ---- */

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

int mech_names_find(const mech_names *t, const char *s, size_t len)
{
    if (t->nslot == 0)
        return -1;
    for (size_t i = hash_bytes(s, len) & (t->nslot - 1);; i = (i + 1) & (t->nslot - 1)) {
        int k = t->slot[i];
        if (k < 0)
            return -1;
        const char *name = t->v[k].name;
        if (strncmp(name, s, len) == 0 && name[len] == '\0')
            return k;
    }
}

static int rehash(mech_names *t, size_t nslot)
{
    int *slot = rmi_malloc(nslot * sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < nslot; i++)
        slot[i] = -1;
    for (int k = 0; k < t->n; k++) {
        size_t i = hash_bytes(t->v[k].name, strlen(t->v[k].name)) & (nslot - 1);
        while (slot[i] >= 0)
            i = (i + 1) & (nslot - 1);
        slot[i] = k;
    }
    rmi_free(t->slot);
    t->slot = slot;
    t->nslot = nslot;
    return 0;
}

int mech_names_add(mech_names *t, remat_arena *a, const char *s, size_t len)
{
    if (t->n == t->cap) {
        if (t->cap > (1 << 28))
            return -1;
        int cap = t->cap ? 2 * t->cap : 32;
        mech_name *v = rmi_realloc(t->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    char *copy = rmi_arena_strndup(a, s, len);
    if (!copy)
        return -1;
    int k = t->n++;
    t->v[k] = (mech_name){.name = copy, .index = -1, .decl_order = -1};
    /* keep the load factor under 1/2 */
    if ((size_t)t->n * 2 > t->nslot) {
        if (rehash(t, t->nslot ? 2 * t->nslot : 64) != 0) {
            t->n--;
            return -1;
        }
    } else {
        size_t i = hash_bytes(copy, len) & (t->nslot - 1);
        while (t->slot[i] >= 0)
            i = (i + 1) & (t->nslot - 1);
        t->slot[i] = k;
    }
    return k;
}

void mech_names_release(mech_names *t)
{
    rmi_free(t->v);
    rmi_free(t->slot);
    *t = (mech_names){0};
}

const char *mech_name_kind_text(mech_name_kind k, int article)
{
    static const char *const text[] = {
        [NAME_SPECIES] = "a species",
        [NAME_PARAM] = "a parameter",
        [NAME_CONST] = "a const",
        [NAME_LET] = "a let",
        [NAME_INDEP] = "the independent variable",
        [NAME_COND] = "a condition",
        [NAME_NET] = "a network",
        [NAME_CONTROL] = "a control profile",
    };
    _Static_assert(sizeof text / sizeof text[0] == NAME_KIND_COUNT, "name kind table");
    REMAT_ASSERT((unsigned)k < NAME_KIND_COUNT);
    const char *t = text[k];
    return article ? t : t + (t[1] == ' ' ? 2 : 4);
}
