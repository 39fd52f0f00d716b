/* flatten.c — inline calls into one flat node list with region instances. */
#include <stdlib.h>
#include <string.h>

#include "ad/flatten.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

/* The functions below return the new id, or -1 when out of memory. */
static int32_t push_node(remat_flat *fl, const remat_fn *fn, remat_val v, int32_t region, const int32_t *in, int nin)
{
    if (fl->n == fl->cap) {
        int32_t nc = fl->cap ? fl->cap * 2 : 64;
        remat_flat_node *p = rmi_realloc(fl->nodes, sizeof *p * (size_t)nc);
        if (!p)
            return -1;
        fl->nodes = p;
        fl->cap = nc;
    }
    int32_t *ins = NULL;
    if (nin > 0) {
        ins = rmi_arena_alloc(&fl->arena, sizeof *ins * (size_t)nin);
        if (!ins)
            return -1;
        memcpy(ins, in, sizeof *ins * (size_t)nin);
    }
    fl->nodes[fl->n] = (remat_flat_node){.fn = fn, .v = v, .region = region, .in = ins};
    return fl->n++;
}

static int32_t push_region(remat_flat *fl, const remat_policy *policy, int32_t parent)
{
    if (fl->n_regions == fl->cap_regions) {
        int32_t nc = fl->cap_regions ? fl->cap_regions * 2 : 16;
        remat_flat_region *p = rmi_realloc(fl->regions, sizeof *p * (size_t)nc);
        if (!p)
            return -1;
        fl->regions = p;
        fl->cap_regions = nc;
    }
    int32_t depth = parent < 0 ? 1 : fl->regions[parent].depth + 1;
    fl->regions[fl->n_regions] =
        (remat_flat_region){.policy = policy, .parent = parent, .depth = depth, .first = fl->n, .last = fl->n - 1};
    return fl->n_regions++;
}

/* Appends fn's nodes; args[i] is the flat id of fn's argument i; writes the
 * flat ids of fn's outputs into outs. 1 on success, 0 when out of memory. */
static int flatten_fn(remat_flat *fl, const remat_fn *fn, const int32_t *args, int32_t region, int32_t *outs)
{
    int32_t *map = rmi_malloc(sizeof *map * (size_t)(fn->n_nodes ? fn->n_nodes : 1));
    int32_t **call_outs = rmi_calloc((size_t)(fn->n_nodes ? fn->n_nodes : 1), sizeof *call_outs);
    int ok = map && call_outs;
    int32_t small[16];
    for (int32_t v = 0; ok && v < fn->n_nodes; v++) {
        const remat_node *n = rmi_fn_node(fn, v);
        map[v] = -1;
        if (n->op == REMAT_OP_ARG) {
            map[v] = args[n->p.arg_pos];
            continue;
        }
        if (n->op == REMAT_OP_PROJ && call_outs[n->in[0]]) {
            map[v] = call_outs[n->in[0]][n->p.output];
            continue;
        }
        int32_t *ins = n->nin <= 16 ? small : rmi_malloc(sizeof *ins * (size_t)n->nin);
        if (!ins) {
            ok = 0;
            break;
        }
        for (int i = 0; i < n->nin; i++) {
            ins[i] = map[n->in[i]];
            REMAT_ASSERT(ins[i] >= 0);
        }
        if (n->op == REMAT_OP_CHECKPOINT) {
            const remat_fn *callee = n->p.call->callee;
            int32_t r = push_region(fl, n->p.call->policy, region);
            call_outs[v] = r < 0 ? NULL : rmi_malloc(sizeof(int32_t) * (size_t)(callee->n_outs ? callee->n_outs : 1));
            ok = call_outs[v] && flatten_fn(fl, callee, ins, r, call_outs[v]);
            if (ok)
                fl->regions[r].last = fl->n - 1;
        } else {
            ok = (map[v] = push_node(fl, fn, v, region, ins, n->nin)) >= 0;
        }
        if (ins != small)
            rmi_free(ins);
    }
    for (int i = 0; ok && i < fn->n_outs; i++) {
        outs[i] = map[fn->outs[i]];
        REMAT_ASSERT(outs[i] >= 0);
    }
    for (int32_t v = 0; call_outs && v < fn->n_nodes; v++)
        rmi_free(call_outs[v]);
    rmi_free(call_outs);
    rmi_free(map);
    return ok;
}

remat_status rmi_flatten(const remat_fn *f, remat_flat *fl)
{
    memset(fl, 0, sizeof *fl);
    fl->n_args = f->n_args;
    fl->n_outs = f->n_outs;
    fl->args = rmi_malloc(sizeof(int32_t) * (size_t)(f->n_args ? f->n_args : 1));
    fl->outs = rmi_malloc(sizeof(int32_t) * (size_t)(f->n_outs ? f->n_outs : 1));
    int ok = fl->args && fl->outs;
    for (int i = 0; ok && i < f->n_args; i++)
        ok = (fl->args[i] = push_node(fl, f, f->args[i], -1, NULL, 0)) >= 0;
    if (!ok || !flatten_fn(fl, f, fl->args, -1, fl->outs)) {
        rmi_flat_free(fl);
        return rmi_error(REMAT_ERR_NOMEM, "function '%s': out of memory inlining its calls", f->name);
    }
    return REMAT_OK;
}

void rmi_flat_free(remat_flat *fl)
{
    if (!fl)
        return;
    rmi_free(fl->nodes);
    rmi_free(fl->regions);
    rmi_free(fl->args);
    rmi_free(fl->outs);
    rmi_arena_clear(&fl->arena);
    memset(fl, 0, sizeof *fl);
}

remat_fn *rmi_fn_inline_calls(const remat_fn *f)
{
    remat_flat fl;
    if (rmi_flatten(f, &fl) != REMAT_OK)
        return NULL;
    remat_fn *g = remat_fn_new(f->name);
    remat_val *map = g ? rmi_malloc(sizeof *map * (size_t)(fl.n ? fl.n : 1)) : NULL;
    remat_val small[16];
    int ok = map != NULL;
    for (int32_t i = 0; ok && i < fl.n; i++) {
        const remat_flat_node *fn = &fl.nodes[i];
        const remat_node *n = rmi_fn_node(fn->fn, fn->v);
        remat_val *ins = n->nin <= 16 ? small : rmi_malloc(sizeof *ins * (size_t)n->nin);
        if (!(ok = ins != NULL))
            break;
        for (int k = 0; k < n->nin; k++)
            ins[k] = map[fn->in[k]];
        map[i] = rmi_fn_copy_node_with_inputs(g, fn->fn, fn->v, ins, 0);
        if (ins != small)
            rmi_free(ins);
    }
    for (int i = 0; ok && i < fl.n_outs; i++)
        remat_fn_output_at(g, map[fl.outs[i]], rmi_fn_node(f, f->outs[i])->loc);
    rmi_free(map);
    rmi_flat_free(&fl);
    if (g && (!ok || g->status != REMAT_OK)) { /* out of memory: nothing else fails copying a valid function */
        rmi_error(REMAT_ERR_NOMEM, "function '%s': out of memory inlining its calls", f->name);
        remat_fn_free(g);
        return NULL;
    }
    return g;
}
