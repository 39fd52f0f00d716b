/*
 * walk.c — one walk over a module tree serves initialisation and
 * application.
 *
 * Init: the ops are emitted into a scratch function whose arguments stand
 * for the parameters (so every shape comes from the graph's own shape rules)
 * and each parameter is recorded with its Flax path, init and RNG scopes.
 * Apply: parameters are read from the caller's values in the same order.
 *
 * Checkpoint regions and scans need functions of their own. Their
 * parameters are pulled through a chain of frames: a frame that owns a
 * function declares an argument the first time a leaf inside asks for a
 * parameter and records the enclosing frame's value as the call's (or the
 * scan's) operand, so argument order = parameter order at every level.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"

#define NN_NAME_MAX 256
#define NN_MAX_DEPTH 64

typedef struct nn_scope {
    const struct nn_scope *parent;
    char disp[NN_NAME_MAX]; /* this level's name in parameter paths ("" at the root) */
    char rng[NN_NAME_MAX];  /* this level's name in the RNG path */
    int n_cls, cap_cls;
    struct {
        char *cls;
        int count;
    } *cls;
    int rng_counter; /* Flax make_rng calls so far in this scope */
} nn_scope;

typedef struct nn_frame {
    struct nn_frame *parent;
    remat_fn *fn;
    /* own parameters (the root frame in apply mode) */
    const remat_val *params;
    int next;
    /* pulled parameters (regions and scan bodies) */
    bool lazy, sliced; /* sliced: a scan body, whose arguments are one layer of a stacked value */
    int64_t length;
    int n_args, cap_args;
    remat_val *args; /* the enclosing frame's values, in pull order */
} nn_frame;

typedef struct {
    bool init;
    remat_nn_params *record;
    /* init of a scanned stack: layer >= 1 appends its RNG scope to the
     * parameters recorded by layer 0, from index `base` on */
    int scan_layer, scan_base, scan_seen;
    int64_t scan_length;
} nn_walk;

static void scope_free(nn_scope *s)
{
    for (int i = 0; i < s->n_cls; i++)
        rmi_free(s->cls[i].cls);
    rmi_free(s->cls);
}

/* k of Class_k in scope s, counting it */
static remat_status scope_take(nn_scope *s, const char *cls, int *k)
{
    for (int i = 0; i < s->n_cls; i++)
        if (strcmp(s->cls[i].cls, cls) == 0) {
            *k = s->cls[i].count++;
            return REMAT_OK;
        }
    if (s->n_cls == s->cap_cls) {
        int cap = s->cap_cls ? 2 * s->cap_cls : 4;
        void *p = rmi_realloc(s->cls, (size_t)cap * sizeof *s->cls);
        if (!p)
            return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory naming modules");
        s->cls = p;
        s->cap_cls = cap;
    }
    s->cls[s->n_cls].cls = rmi_strdup(cls);
    if (!s->cls[s->n_cls].cls)
        return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory naming modules");
    s->cls[s->n_cls].count = 1;
    s->n_cls++;
    *k = 0;
    return REMAT_OK;
}

/* "A_0/B_1" (+ "/leaf" when given) from the root down */
static void scope_path(const nn_scope *s, bool rng, const char *leaf, char *buf, size_t len)
{
    const nn_scope *chain[NN_MAX_DEPTH];
    int n = 0;
    for (const nn_scope *t = s; t && n < NN_MAX_DEPTH; t = t->parent)
        chain[n++] = t;
    size_t at = 0;
    buf[0] = 0;
    for (int i = n - 1; i >= 0; i--) {
        const char *part = rng ? chain[i]->rng : chain[i]->disp;
        if (*part && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "/" : "", part);
    }
    if (leaf && at < len)
        snprintf(buf + at, len - at, "%s%s", at ? "/" : "", leaf);
}

static int scope_depth(const nn_scope *s)
{
    int d = 0;
    for (; s; s = s->parent)
        d++;
    return d;
}

static remat_status scope_rng_path(const nn_scope *s, nn_scope_path *out)
{
    int n = 0;
    for (const nn_scope *t = s; t; t = t->parent)
        n += t->rng[0] != 0;
    out->depth = n;
    out->path = rmi_calloc((size_t)(n ? n : 1), sizeof *out->path);
    if (!out->path)
        return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory");
    int i = n;
    for (const nn_scope *t = s; t; t = t->parent)
        if (t->rng[0]) {
            out->path[--i] = rmi_strdup(t->rng);
            if (!out->path[i])
                return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory");
        }
    return REMAT_OK;
}

static remat_status frame_push_arg(nn_frame *fr, remat_val v)
{
    if (fr->n_args == fr->cap_args) {
        int cap = fr->cap_args ? 2 * fr->cap_args : 8;
        remat_val *p = rmi_realloc(fr->args, (size_t)cap * sizeof *p);
        if (!p)
            return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory");
        fr->args = p;
        fr->cap_args = cap;
    }
    fr->args[fr->n_args++] = v;
    return REMAT_OK;
}

/* The value standing for the next parameter in frame fr (apply mode). */
static remat_status frame_fetch(nn_frame *fr, const char *name, remat_val *out)
{
    if (!fr->lazy) {
        *out = fr->params[fr->next++];
        return REMAT_OK;
    }
    remat_val outer = REMAT_NONE;
    remat_status st = frame_fetch(fr->parent, name, &outer);
    if (st != REMAT_OK)
        return st;
    remat_shape sh = remat_val_shape(fr->parent->fn, outer);
    remat_dtype dt = remat_val_dtype(fr->parent->fn, outer);
    if (sh.rank < 0)
        return rmi_error(REMAT_ERR_ARG, "nn: parameter %s: not a value of the function being built", name);
    if (fr->sliced) {
        if (sh.rank < 1 || sh.dims[0] != fr->length) {
            char b[96];
            return rmi_error(REMAT_ERR_SHAPE, "nn: scanned parameter %s is %s; expected a leading axis of %lld",
                             name, remat_shape_format(dt, &sh, b, sizeof b), (long long)fr->length);
        }
        for (int i = 1; i < sh.rank; i++)
            sh.dims[i - 1] = sh.dims[i];
        sh.rank--;
    }
    if ((st = frame_push_arg(fr, outer)) != REMAT_OK)
        return st;
    *out = remat_arg(fr->fn, name, dt, sh.rank, sh.dims);
    return REMAT_OK;
}

static remat_status walk(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, bool in_own_scope,
                         remat_val x, remat_val *y);

/* One parameter of a leaf: recorded (init) or fetched (apply). */
static remat_status leaf_param(nn_walk *w, nn_scope *s, nn_frame *fr, const char *leaf, nn_init init,
                               remat_dtype dt, int rank, const int64_t *dims, remat_val *out)
{
    char name[1024];
    scope_path(s, false, leaf, name, sizeof name);
    s->rng_counter++;
    if (!w->init)
        return frame_fetch(fr, name, out);
    remat_status st = REMAT_OK;
    if (w->scan_layer > 0) { /* a later layer of a scanned stack: one more RNG scope */
        nn_param *p = &w->record->p[w->scan_base + w->scan_seen++];
        st = scope_rng_path(s, &p->scopes[w->scan_layer]);
    } else {
        nn_param p = {.dtype = dt, .shape = remat_shape_make(rank, dims), .init = init, .layers = 1,
                      .counter = s->rng_counter};
        if (w->scan_length > 0) { /* stacked: a leading axis of layers */
            if (rank + 1 > REMAT_MAX_RANK)
                return rmi_error(REMAT_ERR_SHAPE, "nn: scanned parameter %s has rank %d (max %d)", name,
                                 rank + 1, REMAT_MAX_RANK);
            p.shape.rank = rank + 1;
            p.shape.dims[0] = w->scan_length;
            for (int i = 0; i < rank; i++)
                p.shape.dims[i + 1] = dims[i];
            p.layers = (int)w->scan_length;
            p.stacked = true;
        }
        p.name = rmi_strdup(name);
        p.scopes = rmi_calloc((size_t)p.layers, sizeof *p.scopes);
        if (!p.name || !p.scopes)
            st = rmi_error(REMAT_ERR_NOMEM, "nn: out of memory recording %s", name);
        if (st == REMAT_OK)
            st = scope_rng_path(s, &p.scopes[0]);
        if (st == REMAT_OK)
            st = nn_params_push(w->record, &p);
        else
            nn_param_clear(&p);
    }
    if (st == REMAT_OK)
        *out = remat_arg(fr->fn, name, dt, rank, dims);
    return st;
}

static remat_status fn_failed(remat_fn *f, const char *what)
{
    return rmi_error(remat_fn_status(f), "%s: %s", what, remat_fn_error(f));
}

static remat_status walk_dense(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, remat_val x,
                               remat_val *y)
{
    remat_shape xs = remat_val_shape(fr->fn, x);
    remat_dtype dt = remat_val_dtype(fr->fn, x);
    char where[512];
    scope_path(s, false, NULL, where, sizeof where);
    if (xs.rank < 1)
        return rmi_error(REMAT_ERR_SHAPE, "Dense %s: input must have a features axis (got rank %d)",
                         *where ? where : "(root)", xs.rank);
    remat_val kernel, bias = REMAT_NONE;
    remat_status st = leaf_param(w, s, fr, "kernel", NN_INIT_LECUN, dt, 2,
                                 (int64_t[]){xs.dims[xs.rank - 1], m->features}, &kernel);
    if (st == REMAT_OK && m->use_bias)
        st = leaf_param(w, s, fr, "bias", NN_INIT_ZEROS, dt, 1, (int64_t[]){m->features}, &bias);
    if (st != REMAT_OK)
        return st;
    remat_shape ks = remat_val_shape(fr->fn, kernel);
    if (ks.rank != 2 || ks.dims[0] != xs.dims[xs.rank - 1] || ks.dims[1] != m->features) {
        char a[96], b[96];
        return rmi_error(REMAT_ERR_SHAPE, "Dense %s: kernel %s does not fit input %s and %lld features",
                         *where ? where : "(root)", remat_shape_format(dt, &ks, a, sizeof a),
                         remat_shape_format(dt, &xs, b, sizeof b), (long long)m->features);
    }
    *y = nn_emit_dense(fr->fn, x, kernel, bias);
    return REMAT_OK;
}

static remat_status walk_layer_norm(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, remat_val x,
                                    remat_val *y)
{
    remat_shape xs = remat_val_shape(fr->fn, x);
    remat_dtype dt = remat_val_dtype(fr->fn, x);
    if (xs.rank < 1)
        return rmi_error(REMAT_ERR_SHAPE, "LayerNorm: input must have a features axis");
    int64_t n = xs.dims[xs.rank - 1];
    remat_val scale, bias;
    remat_status st = leaf_param(w, s, fr, "scale", NN_INIT_ONES, dt, 1, &n, &scale);
    if (st == REMAT_OK)
        st = leaf_param(w, s, fr, "bias", NN_INIT_ZEROS, dt, 1, &n, &bias);
    if (st != REMAT_OK)
        return st;
    *y = nn_emit_layer_norm(fr->fn, x, m->epsilon, scale, bias);
    return REMAT_OK;
}

/* A function of its own for a region or a scan body; its first argument is x. */
static remat_status frame_open(nn_frame *child, nn_frame *parent, const char *name, remat_val x, bool sliced,
                               int64_t length, remat_val *gx)
{
    *child = (nn_frame){.parent = parent, .lazy = true, .sliced = sliced, .length = length};
    child->fn = remat_fn_new(name);
    if (!child->fn)
        return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory making %s", name);
    remat_shape sh = remat_val_shape(parent->fn, x);
    *gx = remat_arg(child->fn, "x", remat_val_dtype(parent->fn, x), sh.rank, sh.dims);
    return REMAT_OK;
}

static void frame_close(nn_frame *fr)
{
    remat_fn_free(fr->fn);
    rmi_free(fr->args);
}

static remat_status walk_remat(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, remat_val x,
                               remat_val *y)
{
    if (w->init) /* parameters and shapes are those of the inner module */
        return walk(m->children[0], w, s, fr, true, x, y);
    char name[512];
    scope_path(s, false, NULL, name, sizeof name);
    nn_frame g;
    remat_val gx, gy;
    remat_status st = frame_open(&g, fr, *name ? name : m->cls, x, false, 0, &gx);
    if (st == REMAT_OK)
        st = walk(m->children[0], w, s, &g, true, gx, &gy);
    if (st == REMAT_OK && remat_fn_output(g.fn, gy) == REMAT_NONE)
        st = fn_failed(g.fn, "nn.remat");
    remat_fn *ck = NULL;
    if (st == REMAT_OK && !(ck = remat_checkpoint(g.fn, m->policy)))
        st = rmi_error(REMAT_ERR_NOMEM, "nn.remat: out of memory");
    remat_val *args = NULL;
    if (st == REMAT_OK && !(args = rmi_malloc((size_t)(g.n_args + 1) * sizeof *args)))
        st = rmi_error(REMAT_ERR_NOMEM, "nn.remat: out of memory");
    if (st == REMAT_OK) {
        args[0] = x;
        if (g.n_args)
            memcpy(args + 1, g.args, (size_t)g.n_args * sizeof *args);
        *y = remat_call1(fr->fn, ck, g.n_args + 1, args);
        if (*y == REMAT_NONE)
            st = fn_failed(fr->fn, "nn.remat");
    }
    rmi_free(args);
    remat_fn_free(ck);
    frame_close(&g);
    return st;
}

static remat_status check_carry(remat_fn *f, remat_val x, remat_val y, const char *cls)
{
    remat_shape a = remat_val_shape(f, x), b = remat_val_shape(f, y);
    if (remat_shape_equal(&a, &b) && remat_val_dtype(f, x) == remat_val_dtype(f, y))
        return REMAT_OK;
    char sa[96], sb[96];
    return rmi_error(REMAT_ERR_SHAPE, "%s: a scanned or residual block must keep its input's shape: %s -> %s", cls,
                     remat_shape_format(remat_val_dtype(f, x), &a, sa, sizeof sa),
                     remat_shape_format(remat_val_dtype(f, y), &b, sb, sizeof sb));
}

static remat_status walk_scan_init(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, remat_val x,
                                   remat_val *y)
{
    if (w->scan_length > 0)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "%s: a scan over layers inside a scanned block", m->cls);
    const remat_nn_module *blk = m->children[0];
    char rng_saved[NN_NAME_MAX];
    memcpy(rng_saved, s->rng, sizeof rng_saved);
    w->scan_length = m->length;
    w->scan_base = w->record->n;
    remat_status st = REMAT_OK;
    remat_val h = x;
    for (int64_t l = 0; st == REMAT_OK && l < m->length; l++) {
        /* layer l draws its values as the unrolled network's block Class_l */
        snprintf(s->rng, sizeof s->rng, "%s_%lld", blk->cls, (long long)l);
        nn_scope inner = *s;
        inner.n_cls = inner.cap_cls = 0;
        inner.cls = NULL;
        inner.rng_counter = 0;
        w->scan_layer = (int)l;
        w->scan_seen = 0;
        remat_val hn;
        st = walk(blk, w, &inner, fr, true, h, &hn);
        scope_free(&inner);
        if (st == REMAT_OK && l == 0)
            st = check_carry(fr->fn, h, hn, m->cls);
        h = hn;
    }
    memcpy(s->rng, rng_saved, sizeof rng_saved);
    w->scan_length = 0;
    w->scan_layer = 0;
    *y = h;
    return st;
}

static remat_status walk_scan(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, remat_val x,
                              remat_val *y)
{
    if (w->init)
        return walk_scan_init(m, w, s, fr, x, y);
    const remat_nn_module *blk = m->children[0];
    remat_scan_options opt = m->scan_opt;
    if (blk->kind == NN_REMAT) { /* scan(checkpoint(block, policy)) */
        opt.body_policy = blk->policy;
        blk = blk->children[0];
    }
    char name[512];
    scope_path(s, false, NULL, name, sizeof name);
    nn_frame b;
    remat_val bx, by;
    remat_status st = frame_open(&b, fr, *name ? name : m->cls, x, true, m->length, &bx);
    if (st == REMAT_OK)
        st = walk(blk, w, s, &b, true, bx, &by);
    if (st == REMAT_OK)
        st = check_carry(b.fn, bx, by, m->cls);
    if (st == REMAT_OK && remat_fn_output(b.fn, by) == REMAT_NONE)
        st = fn_failed(b.fn, m->cls);
    if (st == REMAT_OK)
        st = remat_scan(fr->fn, b.fn, m->length, 1, &x, b.n_args, b.args, 0, NULL, &opt, y, NULL);
    frame_close(&b);
    return st;
}

static remat_status walk(const remat_nn_module *m, nn_walk *w, nn_scope *s, nn_frame *fr, bool in_own_scope,
                         remat_val x, remat_val *y)
{
    if (scope_depth(s) >= NN_MAX_DEPTH - 1)
        return rmi_error(REMAT_ERR_UNSUPPORTED, "nn: modules nested deeper than %d scopes", NN_MAX_DEPTH - 2);
    if (nn_module_scoped(m) && !in_own_scope) { /* Class_k inside the parent */
        nn_scope child = {.parent = s};
        int k = 0;
        remat_status st = scope_take(s, m->cls, &k);
        if (st != REMAT_OK)
            return st;
        snprintf(child.disp, sizeof child.disp, "%s_%d", m->cls, k);
        memcpy(child.rng, child.disp, sizeof child.rng);
        st = walk(m, w, &child, fr, true, x, y);
        scope_free(&child);
        return st;
    }
    remat_status st = REMAT_OK;
    switch (m->kind) {
    case NN_DENSE:
        return walk_dense(m, w, s, fr, x, y);
    case NN_LAYER_NORM:
        return walk_layer_norm(m, w, s, fr, x, y);
    case NN_ACT:
        *y = nn_emit_act(fr->fn, x, m->act);
        return REMAT_OK;
    case NN_SEQUENTIAL:
        for (int i = 0; st == REMAT_OK && i < m->n_children; i++)
            st = walk(m->children[i], w, s, fr, false, x, &x);
        *y = x;
        return st;
    case NN_RESIDUAL: {
        remat_val h;
        st = walk(m->children[0], w, s, fr, false, x, &h);
        if (st == REMAT_OK)
            st = check_carry(fr->fn, x, h, "residual");
        if (st == REMAT_OK)
            *y = remat_add(fr->fn, x, h);
        return st;
    }
    case NN_BLOCK:
        return walk(m->children[0], w, s, fr, false, x, y);
    case NN_REMAT:
        return walk_remat(m, w, s, fr, x, y);
    case NN_SCAN:
        return walk_scan(m, w, s, fr, x, y);
    }
    return rmi_error(REMAT_ERR_ARG, "nn: unknown module kind %d", (int)m->kind);
}

remat_status nn_walk_init(const remat_nn_module *m, remat_fn *f, remat_val x, remat_nn_params *record,
                          remat_val *y)
{
    nn_walk w = {.init = true, .record = record};
    nn_scope root = {0};
    nn_frame fr = {.fn = f};
    remat_status st = walk(m, &w, &root, &fr, true, x, y);
    scope_free(&root);
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = fn_failed(f, "nn init");
    return st;
}

remat_status remat_nn_apply(const remat_nn_module *m, remat_fn *f, remat_val x, const remat_val *params,
                            remat_val *y)
{
    if (!m || !f || !y || (!params && nn_module_param_count(m) > 0))
        return rmi_error(REMAT_ERR_NULL, "nn apply: module, function, params or output is NULL");
    *y = REMAT_NONE;
    if (remat_val_shape(f, x).rank < 0)
        return rmi_error(REMAT_ERR_ARG, "nn apply: x is not a value of function '%s'", remat_fn_name(f));
    nn_walk w = {0};
    nn_scope root = {0};
    nn_frame fr = {.fn = f, .params = params};
    remat_val out;
    remat_status st = walk(m, &w, &root, &fr, true, x, &out);
    scope_free(&root);
    if (st == REMAT_OK && remat_fn_status(f) != REMAT_OK)
        st = fn_failed(f, "nn apply");
    if (st == REMAT_OK)
        *y = out;
    return st;
}
