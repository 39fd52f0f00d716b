/*
 * compile.c — from a function to a program: the driver of the passes
 * (passes.h) over one record per node, and the program's lifetime.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/config.h"
#include "core/error.h"
#include "exec/passes.h"

void *rmi_prog_alloc(remat_program *p, size_t bytes)
{
    return rmi_arena_alloc(&p->mem, bytes ? bytes : 1);
}

/* NULL when out of memory: backends and HOP rules check (backend_impl.h, hop.h) */
void *rmi_prog_alloc_backend(void *ctx, size_t bytes) { return rmi_prog_alloc(ctx, bytes); }

/* Backend memory for a HOP instruction, freed with the program (hop.h). */
void *rmi_prog_mem(void *ctx, size_t bytes)
{
    remat_program *p = ctx;
    if (p->n_dev_blocks == p->cap_dev_blocks) {
        int nc = p->cap_dev_blocks ? 2 * p->cap_dev_blocks : 8;
        void **q = rmi_realloc(p->dev_blocks, sizeof *q * (size_t)nc);
        if (!q)
            return NULL;
        p->dev_blocks = q, p->cap_dev_blocks = nc;
    }
    void *m = p->be->iface.mem_alloc(&p->counters->compile_cx, bytes ? bytes : 64);
    if (m)
        p->dev_blocks[p->n_dev_blocks++] = m;
    return m;
}

remat_status rmi_compile_nomem(const char *what)
{
    return rmi_error(REMAT_ERR_NOMEM, "compile: out of memory for %s", what);
}

static remat_cnode *new_records(int32_t nn)
{
    remat_cnode *N = rmi_malloc(sizeof *N * ((size_t)nn + 1));
    if (!N)
        return NULL;
    for (int32_t v = 0; v < nn; v++)
        N[v] = (remat_cnode){.padadd = -1, .bind = -1, .root = v, .gsize = 1, .gnext = v, .place_in = -1,
                             .instr = -1};
    return N;
}

static remat_status compile_fn(const remat_graph_view *g, remat_backend *be, remat_program *p)
{
    remat_compile_ctx c = {.g = g, .be = be, .p = p, .N = new_records(g->n_nodes)};
    if (!c.N)
        return rmi_compile_nomem("the node records");
    /* no_fusion, no_inplace: for comparing the bits of the programs with
     * and without each rewrite */
    const remat_compile_options *o = &p->counters->opts;
    const bool inplace = !o->no_inplace;
    remat_status st = rmi_pass_order(&c);
    if (st == REMAT_OK)
        st = rmi_pass_splat(&c);
    if (st == REMAT_OK && inplace && be->iface.lower_add_pad)
        st = rmi_pass_add_pad(&c);
    if (st == REMAT_OK && be->iface.lower_fused && !o->no_fusion)
        st = rmi_pass_fuse(&c);
    if (st == REMAT_OK && inplace)
        st = rmi_pass_concat_inplace(&c);
    if (st == REMAT_OK)
        st = rmi_pass_storage(&c);
    if (st == REMAT_OK)
        st = rmi_pass_ops(&c);
    /* a root program only: sub-programs of loops run on buffers that may alias */
    if (st == REMAT_OK && inplace && p->counters == &p->own_counters)
        st = rmi_pass_out_scratch(&c);
    if (st == REMAT_OK)
        st = rmi_pass_plan(&c);
    if (st == REMAT_OK)
        st = rmi_pass_lower(&c);
    for (int32_t i = 0; i < c.n_order; i++)
        rmi_free(c.N[c.order[i]].hop_st);
    rmi_free(c.order);
    rmi_free(c.N);
    rmi_free(c.direct);
    rmi_free(c.ops);
    rmi_free(c.bufs);
    rmi_free(c.tier);
    return st;
}

static int has_calls(const remat_fn *fn)
{
    const remat_graph_view f = rmi_graph_view(fn);
    for (int32_t v = 0; v < f.n_nodes; v++)
        if (f.nodes[v].op == REMAT_OP_CHECKPOINT)
            return 1;
    return 0;
}

/* The program's inputs and outputs (shapes, dtypes, argument names). */
static remat_status describe_signature(remat_program *p, const remat_graph_view *g)
{
    p->n_in = g->n_args;
    p->n_out = g->n_outs;
    p->in_desc = rmi_prog_alloc(p, sizeof *p->in_desc * (size_t)(g->n_args + 1));
    p->in_names = rmi_prog_alloc(p, sizeof *p->in_names * (size_t)(g->n_args + 1));
    p->out_desc = rmi_prog_alloc(p, sizeof *p->out_desc * (size_t)(g->n_outs + 1));
    if (!p->in_desc || !p->in_names || !p->out_desc)
        return rmi_compile_nomem("the program's signature");
    for (int i = 0; i < g->n_args; i++) {
        const remat_node *a = &g->nodes[g->args[i]];
        p->in_desc[i] = (remat_tensor){.dtype = (remat_dtype)a->dtype, .shape = a->shape};
        char *nm = rmi_prog_alloc(p, strlen(a->name) + 1);
        if (!nm)
            return rmi_compile_nomem("the program's signature");
        strcpy(nm, a->name);
        p->in_names[i] = nm;
    }
    for (int i = 0; i < g->n_outs; i++) {
        const remat_node *o = &g->nodes[g->outs[i]];
        p->out_desc[i] = (remat_tensor){.dtype = (remat_dtype)o->dtype, .shape = o->shape};
    }
    return REMAT_OK;
}

/* counters NULL: a root program, compiled with opts (checked); else a
 * sub-program of the root owning counters, with the root's options. */
static remat_status compile_common(const remat_fn *fn, remat_backend *be, remat_exec_counters *counters,
                                   const remat_compile_options *opts, remat_program **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "compile: output pointer is NULL");
    *out = NULL;
    if (!fn || !be)
        return rmi_error(REMAT_ERR_NULL, "compile: %s is NULL", fn ? "backend" : "function");
    if (remat_fn_status(fn) != REMAT_OK)
        return rmi_error(remat_fn_status(fn), "compile of '%s', which has a build error: %s", remat_fn_name(fn),
                         remat_fn_error(fn));
    if (remat_fn_num_outputs(fn) == 0)
        return rmi_error(REMAT_ERR_ARG, "compile of '%s': it has no outputs", remat_fn_name(fn));
    remat_fn *inl = NULL;
    if (has_calls(fn) && !(inl = rmi_fn_inline_calls(fn)))
        return REMAT_ERR_NOMEM; /* remat_last_error() says so */
    const remat_graph_view g = rmi_graph_view(inl ? inl : fn);
    remat_program *p = rmi_calloc(1, sizeof *p);
    if (!p) {
        remat_fn_free(inl);
        return rmi_compile_nomem("a program");
    }
    p->be = be;
    p->counters = counters ? counters : &p->own_counters;
    if (!counters) {
        remat_compile_options *o = &p->own_counters.opts;
        *o = *opts;
        char def[4096];
        const char *dir = o->no_cache ? NULL : o->cache_dir ? o->cache_dir
                                         : rmi_default_cache_dir(def, sizeof def) ? def : NULL;
        o->cache_dir = NULL, o->no_cache = !dir;
        if (dir) { /* the caller's string need not outlive the call */
            char *d = rmi_prog_alloc(p, strlen(dir) + 1);
            if (!d) {
                remat_fn_free(inl);
                remat_program_free(p);
                return rmi_compile_nomem("the options");
            }
            o->cache_dir = strcpy(d, dir);
        }
        { /* the same; NULL: the default's */
            const char *t = o->tier_dir ? o->tier_dir : rmi_default_tier_dir();
            char *d = rmi_prog_alloc(p, strlen(t) + 1);
            if (!d) {
                remat_fn_free(inl);
                remat_program_free(p);
                return rmi_compile_nomem("the options");
            }
            o->tier_dir = strcpy(d, t);
        }
    }
    /* the root's compile context: what compiling uploads or fills on a device
     * backend goes through it, and its errors fail the compile */
    remat_exec_ctx *cx = &p->counters->compile_cx;
    remat_status st = counters ? REMAT_OK : rmi_exec_ctx_open(be, cx);
    if (st == REMAT_OK)
        st = describe_signature(p, &g);
    if (st == REMAT_OK)
        st = compile_fn(&g, be, p);
    if (!counters) {
        remat_status closed = rmi_exec_ctx_close(cx);
        if (st == REMAT_OK)
            st = closed;
    }
    remat_fn_free(inl);
    if (st != REMAT_OK) {
        remat_program_free(p);
        return st;
    }
    *out = p;
    return REMAT_OK;
}

remat_status remat_compile_opts(const remat_fn *fn, remat_backend *be, const remat_compile_options *opts,
                                remat_program **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "compile: output pointer is NULL");
    *out = NULL;
    remat_compile_options env;
    if (!opts) {
        remat_compile_options_from_env(&env);
        opts = &env;
    }
    remat_status st = rmi_compile_options_check(opts);
    if (st != REMAT_OK)
        return st;
    if (!be && !(be = remat_backend_from_name(opts->backend))) { /* NULL or "": the CPU */
        char why[256]; /* the message is rewritten below: copy it first */
        snprintf(why, sizeof why, "%s", remat_last_error());
        return rmi_error(strncmp(opts->backend, "cuda", 4) == 0 ? REMAT_ERR_BACKEND : REMAT_ERR_ARG,
                         "compile options: backend '%s': %s", opts->backend, why);
    }
    st = compile_common(fn, be, NULL, opts, out);
    if (st == REMAT_OK && opts->num_threads) /* checked above: cannot fail; nothing changes on a failed compile */
        (void)remat_set_num_threads(opts->num_threads);
    return st;
}

remat_status remat_compile(const remat_fn *fn, remat_backend *be, remat_program **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "compile: output pointer is NULL");
    *out = NULL;
    if (!be) /* remat_compile's contract: a NULL backend is an error, not the environment's */
        return rmi_error(REMAT_ERR_NULL, "compile: %s is NULL", fn ? "backend" : "function");
    return remat_compile_opts(fn, be, NULL, out);
}

/* The backend REMAT_BACKEND names (remat_backend_from_env), the rest of the
 * options from the environment too. */
remat_status remat_compile_env(const remat_fn *fn, remat_program **out)
{
    remat_backend *be = NULL;
    remat_status st = remat_backend_from_env(&be);
    if (st != REMAT_OK) {
        if (out)
            *out = NULL;
        return st;
    }
    return remat_compile(fn, be, out);
}

remat_status rmi_compile_sub(const remat_fn *fn, remat_backend *be, remat_exec_counters *counters,
                             remat_program **out)
{
    remat_status st = compile_common(fn, be, counters, &counters->opts, out);
    if (st != REMAT_OK)
        return st;
    if (counters->n_subs == counters->cap_subs) {
        int cap = counters->cap_subs ? 2 * counters->cap_subs : 8;
        remat_program **subs = rmi_realloc(counters->subs, sizeof *subs * (size_t)cap);
        if (!subs) {
            remat_program_free(*out);
            *out = NULL;
            return rmi_compile_nomem("the list of sub-programs");
        }
        counters->subs = subs;
        counters->cap_subs = cap;
    }
    counters->subs[counters->n_subs++] = *out;
    return REMAT_OK;
}

struct remat_exec_sub_key {
    uint64_t hash;
    size_t len;
    unsigned char *key;
    remat_program *p;
};

static uint64_t sub_key_hash(const unsigned char *k, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* a word at a time: keys are a function's nodes */
        uint64_t w;
        memcpy(&w, k + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ k[i]) * 1099511628211ull;
    return h;
}

remat_status rmi_compile_sub_shared(const remat_fn *fn, const void *key, size_t key_len, remat_backend *be,
                                    remat_exec_counters *counters, remat_program **out)
{
    const uint64_t h = sub_key_hash(key, key_len);
    for (int i = 0; i < counters->n_keyed; i++) {
        const remat_exec_sub_key *e = &counters->keyed[i];
        if (e->hash == h && e->len == key_len && !memcmp(e->key, key, key_len) && e->p->be == be) {
            *out = e->p;
            return REMAT_OK;
        }
    }
    remat_status st = rmi_compile_sub(fn, be, counters, out);
    if (st != REMAT_OK)
        return st;
    if (counters->n_keyed == counters->cap_keyed) { /* out of memory here: the program is just not shared */
        const int cap = counters->cap_keyed ? 2 * counters->cap_keyed : 8;
        remat_exec_sub_key *q = rmi_realloc(counters->keyed, sizeof *q * (size_t)cap);
        if (!q)
            return REMAT_OK;
        counters->keyed = q, counters->cap_keyed = cap;
    }
    unsigned char *copy = rmi_malloc(key_len ? key_len : 1);
    if (!copy)
        return REMAT_OK;
    memcpy(copy, key, key_len);
    counters->keyed[counters->n_keyed++] = (remat_exec_sub_key){.hash = h, .len = key_len, .key = copy, .p = *out};
    return REMAT_OK;
}

remat_status rmi_hop_stats_add(remat_exec_counters *counters, const remat_hop_stats *hook)
{
    if (counters->n_hooks == counters->cap_hooks) {
        int nc = counters->cap_hooks ? 2 * counters->cap_hooks : 8;
        remat_hop_stats *q = rmi_realloc(counters->hooks, sizeof *q * (size_t)nc);
        if (!q)
            return rmi_error(REMAT_ERR_NOMEM, "compile: out of memory recording a loop's statistics");
        counters->hooks = q, counters->cap_hooks = nc;
    }
    counters->hooks[counters->n_hooks++] = *hook;
    return REMAT_OK;
}

void remat_program_free(remat_program *p)
{
    if (!p)
        return;
    const remat_exec_ctx cx = {.be = p->be, .state = p->be_state};
    if (p->be_state && p->be->iface.finish) /* a device backend: let queued work finish before freeing its memory */
        (void)p->be->iface.finish(&cx);
    for (int i = 0; i < p->own_counters.n_hooks; i++) /* before the sub-programs that hold their state */
        if (p->own_counters.hooks[i].release)
            p->own_counters.hooks[i].release(p->own_counters.hooks[i].self);
    for (int i = 0; i < p->own_counters.n_subs; i++)
        remat_program_free(p->own_counters.subs[i]);
    rmi_free(p->own_counters.subs);
    rmi_free(p->own_counters.hooks);
    for (int i = 0; i < p->own_counters.n_keyed; i++)
        rmi_free(p->own_counters.keyed[i].key);
    rmi_free(p->own_counters.keyed);
    for (int i = 0; i < p->n_dev_blocks; i++)
        p->be->iface.mem_free(&cx, p->dev_blocks[i]);
    rmi_free(p->dev_blocks);
    if (p->arena)
        p->be->iface.mem_free(&cx, p->arena);
    if (p->consts)
        p->be->iface.mem_free(&cx, p->consts);
    if (p->io)
        p->be->iface.mem_free(&cx, p->io);
    if (p->be_state)
        p->be->iface.program_free(p->be_state);
    rmi_free(p->instrs);
    rmi_free(p->patches);
    rmi_arena_clear(&p->mem);
    rmi_free(p);
}
