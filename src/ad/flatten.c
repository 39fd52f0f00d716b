/* flatten.c — inline calls into one flat node list with region instances. */
#include <stdlib.h>
#include <string.h>

#include "ad/flatten.h"
#include "core/assert.h"

static int32_t push_node(remat_flat *fl, const remat_fn *fn, remat_val v, int32_t region, const int32_t *in, int nin)
{
    if (fl->n == fl->cap) {
        int32_t nc = fl->cap ? fl->cap * 2 : 64;
        remat_flat_node *p = realloc(fl->nodes, sizeof *p * (size_t)nc);
        REMAT_ASSERT(p);
        fl->nodes = p;
        fl->cap = nc;
    }
    int32_t *ins = NULL;
    if (nin > 0) {
        ins = remat_arena_alloc(&fl->arena, sizeof *ins * (size_t)nin);
        REMAT_ASSERT(ins);
        memcpy(ins, in, sizeof *ins * (size_t)nin);
    }
    fl->nodes[fl->n] = (remat_flat_node){.fn = fn, .v = v, .region = region, .in = ins};
    return fl->n++;
}

static int32_t push_region(remat_flat *fl, const remat_policy *policy, int32_t parent)
{
    if (fl->n_regions == fl->cap_regions) {
        int32_t nc = fl->cap_regions ? fl->cap_regions * 2 : 16;
        remat_flat_region *p = realloc(fl->regions, sizeof *p * (size_t)nc);
        REMAT_ASSERT(p);
        fl->regions = p;
        fl->cap_regions = nc;
    }
    int32_t depth = parent < 0 ? 1 : fl->regions[parent].depth + 1;
    fl->regions[fl->n_regions] =
        (remat_flat_region){.policy = policy, .parent = parent, .depth = depth, .first = fl->n, .last = fl->n - 1};
    return fl->n_regions++;
}

/* Appends fn's nodes; args[i] is the flat id of fn's argument i; writes the
 * flat ids of fn's outputs into outs. */
static void flatten_fn(remat_flat *fl, const remat_fn *fn, const int32_t *args, int32_t region, int32_t *outs)
{
    int32_t *map = malloc(sizeof *map * (size_t)(fn->n_nodes ? fn->n_nodes : 1));
    int32_t **call_outs = calloc((size_t)(fn->n_nodes ? fn->n_nodes : 1), sizeof *call_outs);
    REMAT_ASSERT(map && call_outs);
    int32_t small[16];
    for (int32_t v = 0; v < fn->n_nodes; v++) {
        const remat_node *n = remat_fn_node(fn, v);
        map[v] = -1;
        if (n->op == REMAT_OP_ARG) {
            map[v] = args[n->p.arg_pos];
            continue;
        }
        if (n->op == REMAT_OP_PROJ && call_outs[n->in[0]]) {
            map[v] = call_outs[n->in[0]][n->p.output];
            continue;
        }
        int32_t *ins = n->nin <= 16 ? small : malloc(sizeof *ins * (size_t)n->nin);
        REMAT_ASSERT(ins);
        for (int i = 0; i < n->nin; i++) {
            ins[i] = map[n->in[i]];
            REMAT_ASSERT(ins[i] >= 0);
        }
        if (n->op == REMAT_OP_CHECKPOINT) {
            const remat_fn *callee = n->p.call->callee;
            int32_t r = push_region(fl, n->p.call->policy, region);
            call_outs[v] = malloc(sizeof(int32_t) * (size_t)(callee->n_outs ? callee->n_outs : 1));
            REMAT_ASSERT(call_outs[v]);
            flatten_fn(fl, callee, ins, r, call_outs[v]);
            fl->regions[r].last = fl->n - 1;
        } else {
            map[v] = push_node(fl, fn, v, region, ins, n->nin);
        }
        if (ins != small)
            free(ins);
    }
    for (int i = 0; i < fn->n_outs; i++) {
        outs[i] = map[fn->outs[i]];
        REMAT_ASSERT(outs[i] >= 0);
    }
    for (int32_t v = 0; v < fn->n_nodes; v++)
        free(call_outs[v]);
    free(call_outs);
    free(map);
}

remat_status remat_flatten(const remat_fn *f, remat_flat *fl)
{
    memset(fl, 0, sizeof *fl);
    fl->n_args = f->n_args;
    fl->n_outs = f->n_outs;
    fl->args = malloc(sizeof(int32_t) * (size_t)(f->n_args ? f->n_args : 1));
    fl->outs = malloc(sizeof(int32_t) * (size_t)(f->n_outs ? f->n_outs : 1));
    REMAT_ASSERT(fl->args && fl->outs);
    for (int i = 0; i < f->n_args; i++)
        fl->args[i] = push_node(fl, f, f->args[i], -1, NULL, 0);
    flatten_fn(fl, f, fl->args, -1, fl->outs);
    return REMAT_OK;
}

void remat_flat_free(remat_flat *fl)
{
    if (!fl)
        return;
    free(fl->nodes);
    free(fl->regions);
    free(fl->args);
    free(fl->outs);
    remat_arena_clear(&fl->arena);
    memset(fl, 0, sizeof *fl);
}

remat_fn *remat_fn_inline_calls(const remat_fn *f)
{
    remat_flat fl;
    remat_flatten(f, &fl);
    remat_fn *g = remat_fn_new(f->name);
    REMAT_ASSERT(g);
    remat_val *map = malloc(sizeof *map * (size_t)(fl.n ? fl.n : 1));
    remat_val small[16];
    REMAT_ASSERT(map);
    for (int32_t i = 0; i < fl.n; i++) {
        const remat_flat_node *fn = &fl.nodes[i];
        const remat_node *n = remat_fn_node(fn->fn, fn->v);
        remat_val *ins = n->nin <= 16 ? small : malloc(sizeof *ins * (size_t)n->nin);
        REMAT_ASSERT(ins);
        for (int k = 0; k < n->nin; k++)
            ins[k] = map[fn->in[k]];
        map[i] = remat_fn_copy_node_with_inputs(g, fn->fn, fn->v, ins, 0);
        if (ins != small)
            free(ins);
    }
    for (int i = 0; i < fl.n_outs; i++)
        remat_fn_output_at(g, map[fl.outs[i]], remat_fn_node(f, f->outs[i])->loc);
    free(map);
    remat_flat_free(&fl);
    return g;
}
