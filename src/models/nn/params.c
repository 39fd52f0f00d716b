/*
 * params.c — the parameter list of an initialised module: paths, shapes,
 * values drawn as Flax linen draws them.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"

void nn_param_clear(nn_param *p)
{
    if (p->scopes)
        for (int l = 0; l < p->layers; l++) {
            for (int i = 0; i < p->scopes[l].depth; i++)
                rmi_free(p->scopes[l].path[i]);
            rmi_free(p->scopes[l].path);
        }
    rmi_free(p->scopes);
    rmi_free(p->name);
    rmi_free(p->data);
    memset(p, 0, sizeof *p);
}

remat_status nn_params_push(remat_nn_params *ps, nn_param *p)
{
    if (ps->n == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 16;
        nn_param *q = rmi_realloc(ps->p, (size_t)cap * sizeof *q);
        if (!q) {
            nn_param_clear(p);
            return rmi_error(REMAT_ERR_NOMEM, "nn: out of memory recording parameters");
        }
        ps->p = q;
        ps->cap = cap;
    }
    ps->p[ps->n++] = *p;
    memset(p, 0, sizeof *p);
    return REMAT_OK;
}

void remat_nn_params_free(remat_nn_params *ps)
{
    if (!ps)
        return;
    for (int i = 0; i < ps->n; i++)
        nn_param_clear(&ps->p[i]);
    rmi_free(ps->p);
    rmi_free(ps);
}

static size_t param_bytes(const nn_param *p)
{
    return (size_t)remat_shape_numel(&p->shape) * remat_dtype_size(p->dtype);
}

/* Draws layer l's values of p into dst (one layer's elements, f32). */
static remat_status draw_layer(const nn_param *p, int l, remat_prng_key key, int64_t n, float *dst)
{
    if (p->init == NN_INIT_ZEROS || p->init == NN_INIT_ONES) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = p->init == NN_INIT_ONES ? 1.0f : 0.0f;
        return REMAT_OK;
    }
    remat_prng_key k;
    const nn_scope_path *sp = &p->scopes[l];
    remat_status st = remat_flax_make_rng(key, sp->depth, (const char *const *)sp->path, p->counter, &k);
    if (st != REMAT_OK)
        return st;
    const int64_t *dims = p->shape.dims + (p->stacked ? 1 : 0);
    int rank = p->shape.rank - (p->stacked ? 1 : 0);
    return remat_flax_lecun_normal_f32(k, rank, dims, dst);
}

static remat_status fill(nn_param *p, remat_prng_key key)
{
    int64_t total = remat_shape_numel(&p->shape);
    int64_t per = total / (p->layers ? p->layers : 1);
    p->data = rmi_malloc(param_bytes(p) ? param_bytes(p) : 1);
    float *tmp = p->dtype == REMAT_F32 ? p->data : rmi_malloc((size_t)(per ? per : 1) * sizeof *tmp);
    if (!p->data || !tmp) {
        if (tmp != p->data)
            rmi_free(tmp);
        return rmi_error(REMAT_ERR_NOMEM, "nn init: out of memory for %s (%zu bytes)", p->name, param_bytes(p));
    }
    remat_status st = REMAT_OK;
    for (int l = 0; st == REMAT_OK && l < p->layers; l++) {
        if (p->dtype == REMAT_F32) {
            st = draw_layer(p, l, key, per, (float *)p->data + (size_t)l * (size_t)per);
        } else {
            st = draw_layer(p, l, key, per, tmp);
            double *d = (double *)p->data + (size_t)l * (size_t)per;
            for (int64_t i = 0; st == REMAT_OK && i < per; i++)
                d[i] = tmp[i];
        }
    }
    if (tmp != p->data)
        rmi_free(tmp);
    return st;
}

remat_status remat_nn_init(const remat_nn_module *m, remat_prng_key key, remat_dtype dt, int rank,
                           const int64_t *in_dims, remat_nn_params **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "nn init: output pointer is NULL");
    *out = NULL;
    if (!m)
        return rmi_error(REMAT_ERR_NULL, "nn init: module is NULL");
    if (dt != REMAT_F32 && dt != REMAT_F64)
        return rmi_error(REMAT_ERR_DTYPE, "nn init: dtype %d is not f32 or f64", (int)dt);
    if (rank < 1 || rank > REMAT_MAX_RANK || !in_dims)
        return rmi_error(REMAT_ERR_SHAPE, "nn init: input rank %d must lie in [1, %d] with dims given", rank,
                         REMAT_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (in_dims[i] < 1)
            return rmi_error(REMAT_ERR_SHAPE, "nn init: input dim %d is %lld; dims must be positive", i,
                             (long long)in_dims[i]);
    remat_nn_params *ps = rmi_calloc(1, sizeof *ps);
    remat_fn *f = remat_fn_new("nn_init");
    if (!ps || !f) {
        rmi_free(ps);
        remat_fn_free(f);
        return rmi_error(REMAT_ERR_NOMEM, "nn init: out of memory");
    }
    ps->dtype = dt;
    remat_val x = remat_arg(f, "x", dt, rank, in_dims), y = REMAT_NONE;
    remat_status st = nn_walk_init(m, f, x, ps, &y);
    if (st == REMAT_OK)
        ps->out_shape = remat_val_shape(f, y);
    for (int i = 0; st == REMAT_OK && i < ps->n; i++)
        st = fill(&ps->p[i], key);
    remat_fn_free(f);
    if (st != REMAT_OK) {
        remat_nn_params_free(ps);
        return st;
    }
    *out = ps;
    return REMAT_OK;
}

remat_status remat_nn_params_copy(const remat_nn_params *src, remat_nn_params **out)
{
    if (!src || !out)
        return rmi_error(REMAT_ERR_NULL, "nn params copy: params or output is NULL");
    *out = NULL;
    remat_nn_params *ps = rmi_calloc(1, sizeof *ps);
    if (!ps)
        return rmi_error(REMAT_ERR_NOMEM, "nn params copy: out of memory");
    ps->dtype = src->dtype;
    ps->out_shape = src->out_shape;
    remat_status st = REMAT_OK;
    for (int i = 0; st == REMAT_OK && i < src->n; i++) {
        const nn_param *s = &src->p[i];
        nn_param p = {.dtype = s->dtype, .shape = s->shape, .init = s->init, .layers = s->layers,
                      .stacked = s->stacked, .counter = s->counter};
        p.name = rmi_strdup(s->name);
        p.data = rmi_malloc(param_bytes(s) ? param_bytes(s) : 1);
        p.scopes = rmi_calloc((size_t)s->layers, sizeof *p.scopes);
        bool ok = p.name && p.data && p.scopes;
        for (int l = 0; ok && l < s->layers; l++) {
            p.scopes[l].path = rmi_calloc((size_t)(s->scopes[l].depth ? s->scopes[l].depth : 1), sizeof(char *));
            ok = p.scopes[l].path != NULL;
            for (int d = 0; ok && d < s->scopes[l].depth; d++) {
                p.scopes[l].path[d] = rmi_strdup(s->scopes[l].path[d]);
                ok = p.scopes[l].path[d] != NULL;
                p.scopes[l].depth = d + 1;
            }
        }
        if (!ok) {
            nn_param_clear(&p);
            st = rmi_error(REMAT_ERR_NOMEM, "nn params copy: out of memory");
            break;
        }
        memcpy(p.data, s->data, param_bytes(s));
        st = nn_params_push(ps, &p);
    }
    if (st != REMAT_OK) {
        remat_nn_params_free(ps);
        return st;
    }
    *out = ps;
    return REMAT_OK;
}

int remat_nn_params_count(const remat_nn_params *p)
{
    REMAT_NULL_RETURN(p, 0);
    return p->n;
}

const char *remat_nn_params_name(const remat_nn_params *p, int i)
{
    REMAT_NULL_RETURN(p, NULL);
    return i >= 0 && i < p->n ? p->p[i].name : NULL;
}

remat_tensor remat_nn_params_tensor(const remat_nn_params *p, int i)
{
    REMAT_NULL_RETURN(p, ((remat_tensor){.dtype = REMAT_DTYPE_COUNT, .shape = {.rank = -1}}));
    if (i < 0 || i >= p->n) {
        rmi_error(REMAT_ERR_ARG, "nn params: index %d out of range", i);
        return (remat_tensor){.dtype = REMAT_DTYPE_COUNT, .shape = {.rank = -1}};
    }
    return (remat_tensor){.dtype = p->p[i].dtype, .shape = p->p[i].shape, .data = p->p[i].data};
}

int remat_nn_params_find(const remat_nn_params *p, const char *name)
{
    REMAT_NULL_RETURN(p, -1);
    REMAT_NULL_RETURN(name, -1);
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->p[i].name, name) == 0)
            return i;
    return -1;
}

int64_t remat_nn_params_numel(const remat_nn_params *p)
{
    REMAT_NULL_RETURN(p, 0);
    int64_t n = 0;
    for (int i = 0; i < p->n; i++)
        n += remat_shape_numel(&p->p[i].shape);
    return n;
}

size_t remat_nn_params_bytes(const remat_nn_params *p)
{
    REMAT_NULL_RETURN(p, 0);
    size_t n = 0;
    for (int i = 0; i < p->n; i++)
        n += param_bytes(&p->p[i]);
    return n;
}

remat_shape remat_nn_params_out_shape(const remat_nn_params *p)
{
    REMAT_NULL_RETURN(p, ((remat_shape){.rank = -1}));
    return p->out_shape;
}

remat_status remat_nn_params_args(remat_fn *f, const remat_nn_params *p, remat_val *vals)
{
    if (!f || !p || (!vals && p->n > 0))
        return rmi_error(REMAT_ERR_NULL, "nn params args: function, params or output is NULL");
    for (int i = 0; i < p->n; i++) {
        vals[i] = remat_arg(f, p->p[i].name, p->p[i].dtype, p->p[i].shape.rank, p->p[i].shape.dims);
        if (vals[i] == REMAT_NONE)
            return rmi_error(remat_fn_status(f), "nn params args: %s", remat_fn_error(f));
    }
    return REMAT_OK;
}
