/*
 * vjp.c — reverse mode as a source-to-source transform, with checkpoint
 * regions handled by partial evaluation (as jax.checkpoint).
 *
 * Which values survive a region boundary: the policy of a region R decides
 * what the computation enclosing R keeps of R's values — including values of
 * regions nested in R. So the top-level forward saves v (inside R1 ⊃ R2 ...)
 * iff the outermost region R1's policy permits v, exactly as JAX does (inner
 * policies are not consulted there). Inner policies apply when their
 * enclosing region is recomputed: while the backward of R1 runs, R1's
 * recomputation keeps of R2's values what R2's policy permits, and so on
 * down, which gives hierarchical checkpointing its O(blocks + block size)
 * memory. The backward of a region opens a recompute context; a primal read
 * inside it either defers to the enclosing context (the region's policy
 * permits the value) or recomputes it there, once. Only values the backward
 * actually reads become residuals, so a policy grants permission and never
 * forces a save.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/policy_impl.h"
#include "ad/vjp_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

struct remat_rctx {
    int32_t region;
    remat_rctx *parent;
    remat_val *memo; /* indexed by flat id - region.first */
};

/* Out of memory inside the driver: recorded on g too, so that what rules
 * emit from the REMAT_NONE they get propagates quietly; the walk stops and
 * transform() reports it. */
static void out_of_memory(remat_vjp_ctx *c)
{
    if (c->status == REMAT_OK)
        c->status = REMAT_ERR_NOMEM;
    rmi_fn_fail(c->g, REMAT_ERR_NOMEM, (remat_loc){0}, "vjp: out of memory in the reverse-mode driver");
}

/* Does region r's policy let the computation enclosing r keep v? Policies
 * see one op's primitive, dtypes, shapes and parameters; constants are
 * always available. Answers are cached per node and region depth. */
static int region_keeps(remat_vjp_ctx *c, int32_t v, int32_t r)
{
    const remat_flat *fl = c->fl;
    int32_t depth = fl->regions[r].depth;
    uint64_t bit = depth <= 32 ? 1ull << (depth - 1) : 0;
    if (bit && (c->keep_known[v] & bit))
        return (c->keep_cache[v] & bit) != 0;
    const remat_flat_node *fn = &fl->nodes[v];
    const remat_node *n = rmi_fn_node(fn->fn, fn->v);
    int keep = 1;
    if (n->op != REMAT_OP_CONSTANT) {
        remat_dtype small_dt[16];
        remat_shape small_sh[16];
        remat_dtype *dts = n->nin <= 16 ? small_dt : rmi_malloc(sizeof *dts * (size_t)n->nin);
        remat_shape *shs = n->nin <= 16 ? small_sh : rmi_malloc(sizeof *shs * (size_t)n->nin);
        if (dts && shs) {
            remat_op_info info;
            rmi_node_op_info(fn->fn, fn->v, &info, dts, shs);
            keep = remat_policy_allows(fl->regions[r].policy, &info);
        } else {
            out_of_memory(c); /* keep = 1 meanwhile: nothing is recomputed on its account */
        }
        if (dts != small_dt)
            rmi_free(dts);
        if (shs != small_sh)
            rmi_free(shs);
        if (!dts || !shs)
            return keep;
    }
    if (bit) {
        c->keep_known[v] |= bit;
        if (keep)
            c->keep_cache[v] |= bit;
    }
    return keep;
}

/* v's value as already held by the contexts from x outwards (a memo, or a
 * forward value the backward reads anyway), without computing anything. */
static remat_val held_above(remat_vjp_ctx *c, int32_t v, remat_rctx *x)
{
    const remat_flat *fl = c->fl;
    for (; x; x = x->parent) {
        const remat_flat_region *r = &fl->regions[x->region];
        if (v < r->first || v > r->last)
            continue;
        if (x->memo[v - r->first] != REMAT_NONE)
            return x->memo[v - r->first];
        if (!region_keeps(c, v, x->region))
            return REMAT_NONE;
    }
    if (c->reload[v] != REMAT_NONE)
        return c->reload[v];
    return c->fwd_read[v] ? c->fwd[v] : REMAT_NONE;
}

/* The forward value v as the backward reads it: an offloaded one read back
 * from the slow tier (once, before its first reader), else the forward's
 * node itself. */
static remat_val forward_value(remat_vjp_ctx *c, int32_t v)
{
    if (c->off[v] == REMAT_NONE) {
        c->fwd_read[v] = 1;
        return c->fwd[v];
    }
    if (c->reload[v] == REMAT_NONE) {
        remat_fn *g = c->g;
        const remat_node *o = rmi_fn_node(g, c->off[v]);
        uint8_t flags = g->emit_flags;
        g->emit_flags = REMAT_NODE_BWD | REMAT_NODE_RELOAD;
        c->reload[v] = remat_name_at(g, c->off[v], o->name, o->loc);
        g->emit_flags = flags;
        if (c->reload[v] == REMAT_NONE)
            out_of_memory(c);
    }
    return c->reload[v];
}

/* Where v's value comes from, starting at context x: returns the value if it
 * exists already, else REMAT_NONE with *need set to the context that must
 * recompute it. A value the region's policy refuses is still reused when an
 * enclosing computation holds it anyway (e.g. a block's output that the next
 * block's backward already read): that costs no memory and saves work. */
static remat_val locate(remat_vjp_ctx *c, int32_t v, remat_rctx *x, remat_rctx **need)
{
    const remat_flat *fl = c->fl;
    for (; x; x = x->parent) {
        const remat_flat_region *r = &fl->regions[x->region];
        if (v < r->first || v > r->last)
            continue;
        remat_val m = x->memo[v - r->first];
        if (m != REMAT_NONE)
            return m;
        if (region_keeps(c, v, x->region))
            continue;
        m = held_above(c, v, x->parent);
        if (m != REMAT_NONE)
            return m;
        *need = x;
        return REMAT_NONE;
    }
    return forward_value(c, v);
}

remat_val rmi_vjp_primal(remat_vjp_ctx *c, int32_t v)
{
    remat_rctx *need = NULL;
    remat_val got = locate(c, v, c->cur, &need);
    if (got != REMAT_NONE)
        return got;
    /* Recompute v and whatever it needs, inputs first, with an explicit stack
     * (chains can be thousands of ops long). */
    const remat_flat *fl = c->fl;
    int32_t cap = 64, top = 0;
    struct item {
        int32_t v;
        remat_rctx *x;
    } *st = rmi_malloc(sizeof *st * (size_t)cap);
    if (!st) {
        out_of_memory(c);
        return REMAT_NONE;
    }
    st[top++] = (struct item){v, need};
    uint8_t saved_flags = c->g->emit_flags;
    c->g->emit_flags = REMAT_NODE_BWD | REMAT_NODE_RECOMPUTE;
    int failed = 0;
    while (top > 0 && !failed) {
        struct item it = st[top - 1];
        const remat_flat_region *r = &fl->regions[it.x->region];
        if (it.x->memo[it.v - r->first] != REMAT_NONE) {
            top--;
            continue;
        }
        const remat_flat_node *fn = &fl->nodes[it.v];
        const remat_node *n = rmi_fn_node(fn->fn, fn->v);
        int missing = 0;
        for (int k = 0; k < n->nin; k++) {
            remat_rctx *nx = NULL;
            if (locate(c, fn->in[k], it.x, &nx) == REMAT_NONE) {
                if (top == cap) {
                    void *bigger = rmi_realloc(st, sizeof *st * (size_t)cap * 2);
                    if (!bigger) {
                        failed = 1;
                        break;
                    }
                    st = bigger;
                    cap *= 2;
                }
                st[top++] = (struct item){fn->in[k], nx};
                missing = 1;
            }
        }
        if (missing || failed)
            continue;
        remat_val small[16];
        remat_val *ins = n->nin <= 16 ? small : rmi_malloc(sizeof *ins * (size_t)n->nin);
        if (!ins) {
            failed = 1;
            continue;
        }
        for (int k = 0; k < n->nin; k++) {
            remat_rctx *nx = NULL;
            ins[k] = locate(c, fn->in[k], it.x, &nx);
            REMAT_ASSERT(ins[k] != REMAT_NONE);
        }
        remat_val e = rmi_vjp_emit_primal(c, it.v, ins);
        it.x->memo[it.v - r->first] = e;
        failed = e == REMAT_NONE; /* out of memory (recorded on g); it would be tried again and again */
        if (ins != small)
            rmi_free(ins);
        top--;
    }
    c->g->emit_flags = saved_flags;
    rmi_free(st);
    if (failed) {
        out_of_memory(c);
        return REMAT_NONE;
    }
    got = locate(c, v, c->cur, &need);
    REMAT_ASSERT(got != REMAT_NONE);
    return got;
}

remat_val rmi_vjp_emit_primal(remat_vjp_ctx *c, int32_t i, const remat_val *ins)
{
    const remat_flat_node *fn = &c->fl->nodes[i];
    const remat_node *n = rmi_fn_node(fn->fn, fn->v);
    if (n->op == REMAT_OP_HOP && c->active[i] && n->p.hop.rules->vjp_forward) {
        remat_hop_vjp h = {c, i};
        return n->p.hop.rules->vjp_forward(&h, n->p.hop.data, ins);
    }
    return rmi_fn_copy_node_with_inputs(c->g, fn->fn, fn->v, ins, 0);
}

void rmi_vjp_add_ct(remat_vjp_ctx *c, int32_t i, remat_val contribution)
{
    if (!c->active[i] || contribution == REMAT_NONE)
        return;
    const remat_node *n = rmi_flat_orig(c->fl, i);
    REMAT_ASSERT(remat_shape_equal(&n->shape, &rmi_fn_node(c->g, contribution)->shape));
    if (c->ct[i] == REMAT_NONE)
        c->ct[i] = contribution;
    else
        c->ct[i] = remat_binary_at(c->g, REMAT_OP_ADD, c->ct[i], contribution, n->loc);
}

/* ---- region contexts while walking backwards ---- */
static int is_ancestor_or_self(const remat_flat *fl, int32_t a, int32_t r)
{
    for (; r >= 0; r = fl->regions[r].parent)
        if (r == a)
            return 1;
    return 0;
}

static void close_ctx(remat_vjp_ctx *c)
{
    remat_rctx *x = c->cur;
    c->cur = x->parent;
    rmi_free(x->memo);
    rmi_free(x);
}

/* 0 when out of memory (c->status says so) */
static int enter_region(remat_vjp_ctx *c, int32_t region)
{
    const remat_flat *fl = c->fl;
    while (c->cur && !is_ancestor_or_self(fl, c->cur->region, region))
        close_ctx(c);
    /* open the missing contexts, outermost first */
    int32_t chain[64], n = 0;
    for (int32_t r = region; r >= 0 && !(c->cur && r == c->cur->region); r = fl->regions[r].parent) {
        REMAT_ASSERT(n < 64);
        chain[n++] = r;
    }
    while (n-- > 0) {
        const remat_flat_region *r = &fl->regions[chain[n]];
        remat_rctx *x = rmi_malloc(sizeof *x);
        size_t len = (size_t)(r->last - r->first + 1);
        remat_val *memo = rmi_malloc(sizeof *memo * (len ? len : 1));
        if (!x || !memo) {
            rmi_free(x);
            rmi_free(memo);
            out_of_memory(c);
            return 0;
        }
        x->memo = memo;
        for (size_t k = 0; k < len; k++)
            x->memo[k] = REMAT_NONE;
        x->region = chain[n];
        x->parent = c->cur;
        c->cur = x;
    }
    return 1;
}

/* After the forward made flat node i: when the outermost region holding
 * it offloads it (that region's policy alone decides what the forward
 * keeps, as region_keeps), a node that writes it to the slow tier, right
 * behind it in node order. The compiler drops it when no backward reads
 * it. Values outside every region, HOPs and their outputs stay where they
 * are. */
static void offload_if_policy(remat_vjp_ctx *c, int32_t i)
{
    const remat_flat *fl = c->fl;
    c->off[i] = REMAT_NONE;
    c->reload[i] = REMAT_NONE;
    int32_t r = fl->nodes[i].region;
    if (r < 0 || c->fwd[i] == REMAT_NONE)
        return;
    while (fl->regions[r].parent >= 0)
        r = fl->regions[r].parent;
    const remat_flat_node *fn = &fl->nodes[i];
    const remat_node *n = rmi_fn_node(fn->fn, fn->v);
    if (n->op == REMAT_OP_CONSTANT || n->op == REMAT_OP_ARG || n->op == REMAT_OP_HOP || n->op == REMAT_OP_PROJ)
        return;
    remat_dtype small_dt[16];
    remat_shape small_sh[16];
    remat_dtype *dts = n->nin <= 16 ? small_dt : rmi_malloc(sizeof *dts * (size_t)n->nin);
    remat_shape *shs = n->nin <= 16 ? small_sh : rmi_malloc(sizeof *shs * (size_t)n->nin);
    const char *dst = NULL;
    remat_policy_result kind = REMAT_POLICY_RECOMPUTE;
    if (dts && shs) {
        remat_op_info info;
        rmi_node_op_info(fn->fn, fn->v, &info, dts, shs);
        kind = rmi_policy_decide(fl->regions[r].policy, &info, &dst);
    } else {
        out_of_memory(c);
    }
    if (dts != small_dt)
        rmi_free(dts);
    if (shs != small_sh)
        rmi_free(shs);
    if (kind != REMAT_POLICY_OFFLOAD)
        return;
    remat_fn *g = c->g;
    uint8_t flags = g->emit_flags;
    g->emit_flags = REMAT_NODE_OFFLOAD;
    c->off[i] = remat_name_at(g, c->fwd[i], dst ? dst : "pinned_host", n->loc);
    g->emit_flags = flags;
    if (c->off[i] == REMAT_NONE)
        out_of_memory(c);
}

typedef enum { MODE_VJP, MODE_GRAD, MODE_VALUE_AND_GRAD } vjp_mode;

static remat_status transform(const remat_fn *f, int n_argnums, const int *argnums, vjp_mode mode, remat_fn **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "vjp: output pointer is NULL");
    *out = NULL;
    if (!f)
        return rmi_error(REMAT_ERR_NULL, "vjp: function is NULL");
    if (f->status != REMAT_OK)
        return rmi_error(f->status, "vjp of '%s', which has a build error: %s", f->name, remat_fn_error(f));
    if (f->n_outs == 0)
        return rmi_error(REMAT_ERR_ARG, "vjp of '%s': it has no outputs", f->name);
    if (n_argnums < 0 || (n_argnums > 0 && !argnums))
        return rmi_error(REMAT_ERR_ARG, "vjp of '%s': bad argnums", f->name);
    for (int k = 0; k < n_argnums; k++)
        if (argnums[k] < 0 || argnums[k] >= f->n_args)
            return rmi_error(REMAT_ERR_ARG, "vjp of '%s': argnum %d out of range (it has %d arguments)", f->name,
                             argnums[k], f->n_args);
    if (mode != MODE_VJP) {
        const remat_node *o = rmi_fn_node(f, f->outs[0]);
        char buf[96];
        if (f->n_outs != 1 || o->shape.rank != 0)
            return rmi_error(REMAT_ERR_SHAPE,
                             "grad of '%s': needs one scalar output, it has %d output(s), the first %s", f->name,
                             f->n_outs, rmi_fn_fmt_val(f, f->outs[0], buf, sizeof buf));
    }
    int n_wrt = n_argnums ? n_argnums : f->n_args;

    remat_flat fl;
    remat_status st = rmi_flatten(f, &fl);
    if (st != REMAT_OK)
        return st;
    char name[300];
    snprintf(name, sizeof name, "%s(%s)", mode == MODE_VJP ? "vjp" : mode == MODE_GRAD ? "grad" : "value_and_grad",
             f->name);
    remat_fn *g = remat_fn_new(name);
    remat_vjp_ctx c = {.fl = &fl, .g = g};
    size_t n = (size_t)(fl.n ? fl.n : 1);
    c.fwd = rmi_malloc(sizeof *c.fwd * n);
    c.ct = rmi_malloc(sizeof *c.ct * n);
    c.active = rmi_calloc(n, 1);
    c.fwd_read = rmi_calloc(n, 1);
    c.keep_known = rmi_calloc(n, sizeof *c.keep_known);
    c.keep_cache = rmi_calloc(n, sizeof *c.keep_cache);
    c.hop_ct = rmi_calloc(n, sizeof *c.hop_ct);
    c.off = rmi_malloc(sizeof *c.off * n);
    c.reload = rmi_malloc(sizeof *c.reload * n);
    remat_val *ct_args = rmi_malloc(sizeof *ct_args * (size_t)f->n_outs);
    if (!g || !c.fwd || !c.ct || !c.active || !c.fwd_read || !c.keep_known || !c.keep_cache || !c.hop_ct || !c.off || !c.reload ||
        !ct_args) {
        c.status = REMAT_ERR_NOMEM;
        goto done;
    }

    for (int k = 0; k < n_wrt; k++)
        c.active[fl.args[n_argnums ? argnums[k] : k]] = 1;
    for (int32_t i = 0; i < fl.n; i++) {
        const remat_node *nd = rmi_flat_orig(&fl, i);
        if (remat_op_deriv_of((remat_op)nd->op) == REMAT_OPD_ZERO)
            continue; /* no derivative (compares, stop_gradient): nothing past them is active */
        for (int k = 0; k < nd->nin && !c.active[i]; k++)
            c.active[i] = c.active[fl.nodes[i].in[k]];
    }

    /* forward: every flat node, in order (the compiler drops what is unused) */
    remat_val small[16];
    for (int32_t i = 0; i < fl.n && g->status == REMAT_OK; i++) {
        const remat_flat_node *fn = &fl.nodes[i];
        const remat_node *nd = rmi_fn_node(fn->fn, fn->v);
        remat_val *ins = nd->nin <= 16 ? small : rmi_malloc(sizeof *ins * (size_t)nd->nin);
        if (!ins) {
            c.status = REMAT_ERR_NOMEM;
            break;
        }
        for (int k = 0; k < nd->nin; k++)
            ins[k] = c.fwd[fn->in[k]];
        c.ct[i] = REMAT_NONE;
        c.fwd[i] = rmi_vjp_emit_primal(&c, i, ins);
        if (ins != small)
            rmi_free(ins);
        offload_if_policy(&c, i);
    }
    /* seeds: output cotangents */
    g->emit_flags = REMAT_NODE_BWD;
    for (int k = 0; k < f->n_outs && c.status == REMAT_OK && g->status == REMAT_OK; k++) {
        const remat_node *o = rmi_fn_node(f, f->outs[k]);
        if (mode == MODE_VJP) {
            char an[64];
            snprintf(an, sizeof an, "ct%d", k);
            ct_args[k] = remat_arg_at(g, an, (remat_dtype)o->dtype, o->shape.rank, o->shape.dims, o->loc);
        } else {
            ct_args[k] = remat_const_fill_at(g, (remat_dtype)o->dtype, 0, NULL, 1.0, o->loc);
        }
        rmi_vjp_add_ct(&c, fl.outs[k], ct_args[k]);
    }

    /* backward (stops at the first failure: a rule's, or out of memory in g) */
    for (int32_t i = fl.n - 1; i >= 0 && c.status == REMAT_OK && g->status == REMAT_OK; i--) {
        if (!enter_region(&c, fl.nodes[i].region))
            break;
        const remat_node *nd = rmi_flat_orig(&fl, i);
        if (c.ct[i] == REMAT_NONE && !(nd->op == REMAT_OP_HOP && c.hop_ct[i]))
            continue;
        if (nd->op == REMAT_OP_ARG || nd->op == REMAT_OP_CONSTANT)
            continue;
        c.node = i;
        remat_status rs = rmi_vjp_rule(&c, i, c.ct[i]);
        if (c.status == REMAT_OK) /* else the driver ran out of memory during the rule */
            c.status = rs;
    }
    while (c.cur)
        close_ctx(&c);

    if (c.status == REMAT_OK && g->status == REMAT_OK) {
        g->emit_flags = 0;
        if (mode != MODE_GRAD)
            for (int k = 0; k < f->n_outs; k++)
                remat_fn_output_at(g, c.fwd[fl.outs[k]], rmi_fn_node(f, f->outs[k])->loc);
        g->emit_flags = REMAT_NODE_BWD;
        for (int k = 0; k < n_wrt; k++) {
            int32_t a = fl.args[n_argnums ? argnums[k] : k];
            remat_val v = c.ct[a];
            const remat_node *an = rmi_flat_orig(&fl, a);
            if (v == REMAT_NONE) /* the output does not depend on it */
                v = remat_const_fill_at(g, (remat_dtype)an->dtype, an->shape.rank, an->shape.dims, 0.0, an->loc);
            remat_fn_output_at(g, v, an->loc);
        }
        g->emit_flags = 0;
    }

done:
    st = c.status;
    if (g && g->status == REMAT_ERR_NOMEM) /* whatever a rule made of it */
        st = REMAT_ERR_NOMEM;
    if (st == REMAT_ERR_NOMEM)
        st = rmi_error(REMAT_ERR_NOMEM, "vjp of '%s': out of memory building the reverse-mode function%s%s", f->name,
                       g && g->error ? ": " : "", g && g->error ? g->error : "");
    else if (st == REMAT_OK && g->status != REMAT_OK)
        st = rmi_error(REMAT_ERR_UNSUPPORTED, "vjp of '%s': internal build error: %s", f->name, remat_fn_error(g));
    if (st == REMAT_OK)
        *out = g;
    else
        remat_fn_free(g);
    rmi_free(ct_args);
    rmi_free(c.fwd);
    rmi_free(c.ct);
    rmi_free(c.active);
    rmi_free(c.fwd_read);
    rmi_free(c.keep_known);
    rmi_free(c.keep_cache);
    for (size_t k = 0; c.hop_ct && k < n; k++)
        rmi_free(c.hop_ct[k]);
    rmi_free(c.hop_ct);
    rmi_free(c.off);
    rmi_free(c.reload);
    rmi_flat_free(&fl);
    return st;
}

remat_status remat_vjp(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    return transform(f, n_argnums, argnums, MODE_VJP, out);
}

remat_status remat_grad(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    return transform(f, n_argnums, argnums, MODE_GRAD, out);
}

remat_status remat_value_and_grad(const remat_fn *f, int n_argnums, const int *argnums, remat_fn **out)
{
    return transform(f, n_argnums, argnums, MODE_VALUE_AND_GRAD, out);
}
