/*
 * net.c — networks in mechanisms (remat/mechanism.h, "Networks"): the
 * statement "net f = mlp(inputs: 2, width: 16, depth: 2, activation: tanh)",
 * its remat/nn.h module with Flax's names and init, the weights as the
 * mechanism's parameters, and a call's value in doubles (eval.c) and in a
 * graph (lower.c). Calls themselves are parsed in expr.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "models/kinetics/mechanism_impl.h"

enum { OPT_INPUTS, OPT_WIDTH, OPT_DEPTH, OPT_OUTPUTS, OPT_ACTIVATION, OPT_SEED, OPT_COUNT };
static const char *const opt_names[OPT_COUNT] = {"inputs", "width", "depth", "outputs", "activation", "seed"};

/* An integer option's value in [lo, hi] at p->tok. */
static remat_status int_value(mech_parser *p, const mech_token *net, int opt, double lo, double hi, double *out)
{
    char sb[64];
    const mech_token *t = &p->tok;
    if (t->kind != TOK_NUM || t->num != floor(t->num) || t->num < lo || t->num > hi)
        return mech_fail(p, t->line, t->col, "'%s' of network '%.*s' must be an integer from %.0f to %.0f, got %s",
                         opt_names[opt], net->len, net->text, lo, hi, mech_tok_show(t, sb, sizeof sb));
    *out = t->num;
    return mech_advance(p);
}

static remat_status activation_value(mech_parser *p, const mech_token *net, remat_nn_activation *out)
{
    char sb[64];
    const mech_token *t = &p->tok;
    int ok = 0;
    for (int a = 0; a < REMAT_NN_ACTIVATION_COUNT && !ok; a++)
        if (mech_tok_is(t, remat_nn_activation_name((remat_nn_activation)a))) {
            *out = (remat_nn_activation)a;
            ok = 1;
        }
    if (!ok)
        return mech_fail(p, t->line, t->col,
                         "unknown activation %s of network '%.*s' (expected relu, gelu, gelu_erf, tanh, silu, "
                         "identity)",
                         mech_tok_show(t, sb, sizeof sb), net->len, net->text);
    return mech_advance(p);
}

/* "mlp" "(" NAME ":" value { "," NAME ":" value } ")" into n */
static remat_status parse_options(mech_parser *p, const mech_token *name, mech_net *n)
{
    char sb[64];
    mech_token mlp = p->tok;
    if (!mech_tok_is(&mlp, "mlp"))
        return mech_fail(p, mlp.line, mlp.col, "expected 'mlp(...)' after 'net %.*s =', got %s", name->len,
                         name->text, mech_tok_show(&mlp, sb, sizeof sb));
    MECH_TRY(mech_advance(p));
    if (p->tok.kind != TOK_LPAREN)
        return mech_fail(p, p->tok.line, p->tok.col, "expected '(' after 'mlp', got %s",
                         mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(mech_advance(p));
    int seen[OPT_COUNT] = {0};
    double v[OPT_COUNT] = {[OPT_OUTPUTS] = 1, [OPT_SEED] = 0};
    n->act = REMAT_NN_TANH;
    for (;;) {
        mech_token key = p->tok;
        int opt = -1;
        for (int i = 0; i < OPT_COUNT; i++)
            if (mech_tok_is(&key, opt_names[i]))
                opt = i;
        if (opt < 0)
            return mech_fail(p, key.line, key.col,
                             "unknown option %s of mlp (expected inputs, width, depth, outputs, activation, seed)",
                             mech_tok_show(&key, sb, sizeof sb));
        if (seen[opt])
            return mech_fail(p, key.line, key.col, "option '%s' given twice (first at column %d)", opt_names[opt],
                             seen[opt]);
        seen[opt] = key.col;
        MECH_TRY(mech_advance(p));
        if (p->tok.kind != TOK_COLON)
            return mech_fail(p, p->tok.line, p->tok.col, "expected ':' after '%s', got %s", opt_names[opt],
                             mech_tok_show(&p->tok, sb, sizeof sb));
        MECH_TRY(mech_advance(p));
        switch (opt) {
        case OPT_INPUTS: MECH_TRY(int_value(p, name, opt, 1, MECH_NET_MAX_IN, &v[opt])); break;
        case OPT_WIDTH:
        case OPT_OUTPUTS: MECH_TRY(int_value(p, name, opt, 1, MECH_NET_MAX_WIDTH, &v[opt])); break;
        case OPT_DEPTH: MECH_TRY(int_value(p, name, opt, 1, MECH_NET_MAX_DEPTH, &v[opt])); break;
        case OPT_SEED: MECH_TRY(int_value(p, name, opt, 0, 4294967295.0, &v[opt])); break;
        default: MECH_TRY(activation_value(p, name, &n->act)); break;
        }
        if (p->tok.kind == TOK_RPAREN)
            break;
        if (p->tok.kind != TOK_COMMA)
            return mech_fail(p, p->tok.line, p->tok.col, "expected ',' or ')' in the options of mlp, got %s",
                             mech_tok_show(&p->tok, sb, sizeof sb));
        MECH_TRY(mech_advance(p));
    }
    for (int i = OPT_INPUTS; i <= OPT_DEPTH; i++)
        if (!seen[i])
            return mech_fail(p, mlp.line, mlp.col, "network '%.*s' needs '%s: N' (mlp takes inputs, width, depth; "
                             "outputs, activation, seed are optional)",
                             name->len, name->text, opt_names[i]);
    n->nin = (int)v[OPT_INPUTS];
    n->width = (int)v[OPT_WIDTH];
    n->depth = (int)v[OPT_DEPTH];
    n->nout = (int)v[OPT_OUTPUTS];
    n->seed = (unsigned long long)v[OPT_SEED];
    return mech_advance(p);
}

/* The module and its initial weights, named "f.Dense_0.kernel[i][j]". */
static remat_status build(mech_parser *p, mech_net *n)
{
    int nm = 2 * n->depth + 1;
    remat_nn_module *mods[2 * MECH_NET_MAX_DEPTH + 1] = {0};
    for (int l = 0; l < n->depth; l++) {
        mods[2 * l] = remat_nn_dense(n->width, true);
        mods[2 * l + 1] = remat_nn_act(n->act);
    }
    mods[nm - 1] = remat_nn_dense(n->nout, true);
    int ok = 1;
    for (int i = 0; i < nm; i++)
        ok = ok && mods[i];
    n->mod = ok ? remat_nn_sequential(nm, mods) : NULL;
    for (int i = 0; i < nm; i++)
        remat_nn_module_free(mods[i]);
    n->act_mod = remat_nn_act(n->act);
    if (!n->mod || !n->act_mod)
        return mech_nomem(p);
    remat_nn_params *w = NULL;
    if (remat_nn_init(n->mod, remat_prng_key_from_seed(n->seed), REMAT_F64, 1, (int64_t[]){n->nin}, &w) != REMAT_OK)
        return rmi_error(REMAT_ERR_NOMEM, "%s:%d:%d: network '%s': %s", p->file, n->line, n->col, n->name,
                         remat_last_error());
    remat_status st = REMAT_OK;
    remat_arena *a = &p->m->arena;
    int64_t total = remat_nn_params_numel(w);
    n->nweights = (int)total;
    n->init = rmi_arena_alloc(a, sizeof *n->init * (size_t)total);
    n->wnames = rmi_arena_alloc(a, sizeof *n->wnames * (size_t)total);
    n->kernel_off = rmi_arena_alloc(a, sizeof(int) * (size_t)(n->depth + 1));
    n->bias_off = rmi_arena_alloc(a, sizeof(int) * (size_t)(n->depth + 1));
    n->ntensors = remat_nn_params_count(w);
    n->t_off = rmi_arena_alloc(a, sizeof *n->t_off * (size_t)n->ntensors);
    n->t_shape = rmi_arena_alloc(a, sizeof *n->t_shape * (size_t)n->ntensors);
    if (!n->init || !n->wnames || !n->kernel_off || !n->bias_off || !n->t_off || !n->t_shape) {
        st = mech_nomem(p);
        goto done;
    }
    for (int l = 0; l <= n->depth; l++)
        n->kernel_off[l] = n->bias_off[l] = -1;
    int off = 0;
    for (int t = 0; t < remat_nn_params_count(w); t++) {
        const char *path = remat_nn_params_name(w, t);
        remat_tensor v = remat_nn_params_tensor(w, t);
        int64_t numel = 1;
        for (int d = 0; d < v.shape.rank; d++)
            numel *= v.shape.dims[d];
        int layer = -1, kernel = strstr(path, "/kernel") != NULL;
        int scanned = sscanf(path, "Dense_%d/", &layer);
        REMAT_ASSERT(scanned == 1 && layer >= 0 && layer <= n->depth);
        (kernel ? n->kernel_off : n->bias_off)[layer] = off;
        n->t_off[t] = off;
        n->t_shape[t] = v.shape;
        for (int64_t i = 0; i < numel; i++) {
            char nb[MECH_MAX_NAME + 96];
            int o = snprintf(nb, sizeof nb, "%s.", n->name);
            for (const char *c = path; *c && o < (int)sizeof nb - 1; c++)
                nb[o++] = *c == '/' ? '.' : *c;
            if (v.shape.rank == 2)
                snprintf(nb + o, sizeof nb - (size_t)o, "[%lld][%lld]", (long long)(i / v.shape.dims[1]),
                         (long long)(i % v.shape.dims[1]));
            else
                snprintf(nb + o, sizeof nb - (size_t)o, "[%lld]", (long long)i);
            n->init[off + i] = ((const double *)v.data)[i];
            if (!(n->wnames[off + i] = rmi_arena_strndup(a, nb, strlen(nb)))) {
                st = mech_nomem(p);
                goto done;
            }
        }
        off += (int)numel;
    }
    for (int l = 0; l <= n->depth; l++)
        REMAT_ASSERT(n->kernel_off[l] >= 0 && n->bias_off[l] >= 0);
done:
    remat_nn_params_free(w);
    return st;
}

remat_status mech_parse_net(mech_parser *p)
{
    char sb[64];
    remat_mechanism *m = p->m;
    MECH_TRY(mech_advance(p));
    mech_token name = p->tok;
    if (name.kind != TOK_NAME)
        return mech_fail(p, name.line, name.col, "expected a name after 'net', got %s",
                         mech_tok_show(&name, sb, sizeof sb));
    MECH_TRY(mech_declare(p, NAME_NET, &name));
    MECH_TRY(mech_advance(p));
    if (p->tok.kind != TOK_EQ)
        return mech_fail(p, p->tok.line, p->tok.col, "expected '=' after 'net %.*s', got %s", name.len, name.text,
                         mech_tok_show(&p->tok, sb, sizeof sb));
    MECH_TRY(mech_advance(p));
    if (m->nnets == p->capnets) {
        int cap = p->capnets ? 2 * p->capnets : 4;
        mech_net *v = rmi_realloc(m->nets, (size_t)cap * sizeof *v);
        if (!v)
            return mech_nomem(p);
        m->nets = v;
        p->capnets = cap;
    }
    mech_net *n = &m->nets[m->nnets++];
    *n = (mech_net){.line = name.line, .col = name.col};
    if (!(n->name = rmi_arena_strndup(&m->arena, name.text, (size_t)name.len)))
        return mech_nomem(p);
    MECH_TRY(parse_options(p, &name, n));
    double weights = (double)(n->nin + 1) * n->width + (double)(n->depth - 1) * (n->width + 1) * n->width +
                     (double)(n->width + 1) * n->nout;
    if (weights + p->nweights > 1e6)
        return mech_fail(p, name.line, name.col, "network '%.*s' has %.0f weights: at most 1000000 in a mechanism",
                         name.len, name.text, weights);
    MECH_TRY(build(p, n));
    n->first_param = p->nweights; /* after the declared parameters: offset by mech_finish_names */
    p->nweights += n->nweights;
    return mech_expect_end(p, "the network");
}

void mech_nets_release(remat_mechanism *m)
{
    for (int i = 0; i < m->nnets; i++) {
        remat_nn_module_free(m->nets[i].mod);
        remat_nn_module_free(m->nets[i].act_mod);
    }
    rmi_free(m->nets);
    m->nets = NULL;
    m->nnets = 0;
}

/* jax.nn's formulas (remat/nn.h) in doubles */
static double activate(remat_nn_activation a, double x)
{
    switch (a) {
    case REMAT_NN_RELU: return x > 0 ? x : 0.0;
    case REMAT_NN_GELU: return x * 0.5 * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case REMAT_NN_GELU_ERF: return x * (erf(x / sqrt(2.0)) + 1) / 2;
    case REMAT_NN_TANH: return tanh(x);
    case REMAT_NN_SILU: return x / (1 + exp(-x));
    case REMAT_NN_IDENTITY: return x;
    case REMAT_NN_ACTIVATION_COUNT: break;
    }
    REMAT_UNREACHABLE("bad activation in a network");
}

double mech_net_eval(const mech_net *n, int o, const double *in, const double *params)
{
    double buf[2][MECH_NET_MAX_WIDTH];
    const double *w = params + n->first_param;
    const double *x = in;
    int nx = n->nin;
    for (int l = 0; l < n->depth; l++) {
        double *h = buf[l & 1];
        const double *K = w + n->kernel_off[l], *b = w + n->bias_off[l];
        for (int j = 0; j < n->width; j++) {
            double s = 0;
            for (int i = 0; i < nx; i++)
                s += x[i] * K[(size_t)i * (size_t)n->width + (size_t)j];
            h[j] = activate(n->act, s + b[j]);
        }
        x = h;
        nx = n->width;
    }
    const double *K = w + n->kernel_off[n->depth], *b = w + n->bias_off[n->depth];
    double s = 0;
    for (int i = 0; i < nx; i++)
        s += x[i] * K[(size_t)i * (size_t)n->nout + (size_t)o];
    return s + b[o];
}

/* The run [a, a + len) of the last axis of v (..., P). */
static remat_val last_axis(remat_fn *f, remat_val v, int64_t a, int64_t len)
{
    remat_shape s = remat_val_shape(f, v);
    int64_t start[REMAT_MAX_RANK] = {0}, limit[REMAT_MAX_RANK];
    memcpy(limit, s.dims, sizeof limit);
    start[s.rank - 1] = a;
    limit[s.rank - 1] = a + len;
    return remat_slice(f, v, start, limit, NULL);
}

/* A parameter set per batch entry, params (..., P), x (..., nin): each
 * Dense as sum_i x[..., i, None] * kernel[..., i, :] + bias[...], the
 * activation by remat/nn.h's module. */
static remat_status lower_batched(remat_fn *f, const mech_net *n, remat_val x, remat_val params, remat_val *y)
{
    remat_shape xs = remat_val_shape(f, x);
    int r = xs.rank;
    for (int l = 0; l <= n->depth; l++) {
        int64_t in = l == 0 ? n->nin : n->width, out = l == n->depth ? n->nout : n->width;
        remat_shape ks = xs, cs = xs;
        ks.dims[r - 1] = in;
        ks.dims[r] = out;
        ks.rank = r + 1;
        cs.dims[r - 1] = in;
        cs.dims[r] = 1;
        cs.rank = r + 1;
        remat_val k = remat_reshape(f, last_axis(f, params, n->first_param + n->kernel_off[l], in * out), ks.rank,
                                    ks.dims);
        remat_val b = last_axis(f, params, n->first_param + n->bias_off[l], out);
        remat_val col = remat_reshape(f, x, cs.rank, cs.dims);
        remat_val h = remat_add(f, remat_sum(f, remat_mul(f, remat_broadcast_to(f, col, ks.rank, ks.dims), k), 1,
                                             (int[]){r - 1}),
                                b);
        if (l < n->depth) {
            remat_status st = remat_nn_apply(n->act_mod, f, h, NULL, &h);
            if (st != REMAT_OK)
                return st;
        }
        x = h;
    }
    *y = x;
    return remat_fn_status(f);
}

remat_status mech_net_lower(remat_fn *f, const mech_net *n, remat_val x, remat_val params, remat_val *y)
{
    if (remat_val_shape(f, params).rank != 1)
        return lower_batched(f, n, x, params, y);
    remat_val pv[2 * (MECH_NET_MAX_DEPTH + 1)];
    REMAT_ASSERT(n->ntensors <= (int)(sizeof pv / sizeof pv[0]));
    /* each tensor of remat_nn_params order: its run of the parameters, reshaped */
    for (int t = 0; t < n->ntensors; t++) {
        const remat_shape *s = &n->t_shape[t];
        int64_t numel = 1;
        for (int d = 0; d < s->rank; d++)
            numel *= s->dims[d];
        int64_t a = n->first_param + n->t_off[t];
        pv[t] = remat_slice(f, params, (int64_t[]){a}, (int64_t[]){a + numel}, NULL);
        if (s->rank != 1)
            pv[t] = remat_reshape(f, pv[t], s->rank, s->dims);
    }
    return remat_nn_apply(n->mod, f, x, pv, y);
}
