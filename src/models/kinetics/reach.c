/*
 * reach.c — what a mechanism's rates read, found without recursion: the lets
 * (through other lets) and the independent variable. The lowering uses it to
 * lower the lets in definition order before the rates; the ODE and reactor
 * builders ask whether t must be passed.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"
#include "remat/kinetics.h"

typedef struct {
    const remat_expr **v;
    size_t n, cap;
} expr_stack;

static int push(expr_stack *s, const remat_expr *e)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        const remat_expr **v = rmi_realloc(s->v, cap * sizeof *v);
        if (!v)
            return 0;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = e;
    return 1;
}

/* Which lets the rates read (used[nlets], through other lets too) and
 * whether they read the independent variable: a depth-first search on its
 * own stack. A subtree shared by several rates (a reaction's net rate, in
 * the dy/dt of each species it changes) is searched once per sharer, a few
 * times. 0 when out of memory. */
int mech_reach(const remat_mechanism *m, unsigned char *used, int *reads_t)
{
    expr_stack st = {0};
    int ok = 1;
    *reads_t = 0;
    for (int i = 0; ok && i < remat_mechanism_species_count(m); i++) {
        ok = push(&st, remat_mechanism_rhs(m, i));
        while (ok && st.n > 0) {
            const remat_expr *e = st.v[--st.n];
            if (e->kind == REMAT_EXPR_INDEP) {
                *reads_t = 1;
            } else if (e->kind == REMAT_EXPR_LET) {
                if (!used[e->index]) {
                    used[e->index] = 1;
                    ok = push(&st, remat_mechanism_let_expr(m, e->index));
                }
            } else {
                for (int k = 0; ok && k < e->nargs; k++)
                    ok = push(&st, mech_child(e, k));
            }
        }
    }
    rmi_free(st.v);
    return ok;
}

int remat_kinetics_uses_indep(const remat_mechanism *m)
{
    REMAT_NULL_RETURN(m, 0);
    unsigned char *used = rmi_calloc((size_t)remat_mechanism_let_count(m) + 1, 1);
    int r = 1; /* out of memory: say yes, passing t to rates that ignore it is harmless */
    if (used && !mech_reach(m, used, &r))
        r = 1;
    rmi_free(used);
    return r;
}
