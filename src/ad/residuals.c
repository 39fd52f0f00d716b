/*
 * residuals.c — the saved-residual report (JAX's print_saved_residuals).
 *
 * In a function made by reverse mode, a residual is a forward value (a node
 * not emitted by the backward) that a live backward node reads. Constants are
 * program data, not residuals.
 */
#include <stdlib.h>
#include <string.h>

#include "ad/graph_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

struct remat_residual_list {
    remat_residual *items;
    int n;
    size_t bytes;
};

remat_status remat_fn_residuals(const remat_fn *g, remat_residual_list **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "residuals: output pointer is NULL");
    *out = NULL;
    if (!g)
        return rmi_error(REMAT_ERR_NULL, "residuals: function is NULL");
    uint8_t *live = rmi_fn_live_mask(g);
    uint8_t *is_res = rmi_malloc((size_t)g->n_nodes + 1);
    remat_residual_list *r = rmi_calloc(1, sizeof *r);
    int ok = live && is_res && r;
    int count = ok ? rmi_fn_residual_mask(g, live, is_res) : 0;
    if (ok)
        ok = (r->items = rmi_calloc((size_t)(count ? count : 1), sizeof *r->items)) != NULL;
    for (int32_t v = 0; ok && v < g->n_nodes; v++) {
        if (!is_res[v])
            continue;
        const remat_node *n = &g->nodes[v];
        remat_residual *e = &r->items[r->n++];
        if (n->flags & REMAT_NODE_OFFLOAD) { /* the value offloaded (its name is the memory kind) */
            ok = (e->offload_dst = rmi_strdup(n->name)) != NULL;
            n = &g->nodes[n->in[0]];
        }
        e->dtype = (remat_dtype)n->dtype;
        e->shape = n->shape;
        e->op = (remat_op)n->op;
        e->loc = n->loc;
        e->count = 1;
        e->bytes = (size_t)remat_shape_numel(&n->shape) * remat_dtype_size(e->dtype);
        e->kind = n->op == REMAT_OP_ARG ? REMAT_RESIDUAL_ARGUMENT
                  : n->op == REMAT_OP_NAME ? REMAT_RESIDUAL_NAMED
                                           : REMAT_RESIDUAL_OUTPUT;
        if ((n->op == REMAT_OP_ARG || n->op == REMAT_OP_NAME) && n->name)
            ok = (e->name = rmi_strdup(n->name)) != NULL;
        if (ok && n->op == REMAT_OP_PROJ) { /* an output of a higher-order node may describe itself */
            const remat_node *h = &g->nodes[n->in[0]];
            if (h->op == REMAT_OP_HOP && h->p.hop.rules->describe_output)
                h->p.hop.rules->describe_output(h->p.hop.data, (int)n->p.output, e);
            if (e->detail)
                ok = (e->detail = rmi_strdup(e->detail)) != NULL;
        }
        r->bytes += e->bytes;
    }
    rmi_free(live);
    rmi_free(is_res);
    if (!ok) {
        remat_residual_list_free(r);
        return rmi_error(REMAT_ERR_NOMEM, "residuals of '%s': out of memory", g->name);
    }
    *out = r;
    return REMAT_OK;
}

remat_status remat_saved_residuals(const remat_fn *f, int n_argnums, const int *argnums, remat_residual_list **out)
{
    remat_fn *g = NULL;
    if (out)
        *out = NULL;
    remat_status st = remat_vjp(f, n_argnums, argnums, &g);
    if (st != REMAT_OK)
        return st;
    st = remat_fn_residuals(g, out);
    remat_fn_free(g);
    return st;
}

int remat_residual_list_count(const remat_residual_list *r)
{
    REMAT_NULL_RETURN(r, 0);
    return r->n;
}

const remat_residual *remat_residual_list_get(const remat_residual_list *r, int i)
{
    REMAT_NULL_RETURN(r, NULL);
    return i >= 0 && i < r->n ? &r->items[i] : NULL;
}

size_t remat_residual_list_bytes(const remat_residual_list *r)
{
    REMAT_NULL_RETURN(r, 0);
    return r->bytes;
}

static const char *short_path(const char *p)
{
    if (!p)
        return "?";
    while (!strncmp(p, "../", 3) || !strncmp(p, "./", 2))
        p += p[1] == '/' ? 2 : 3;
    return p;
}

char *remat_residual_format(const remat_residual *e, char *buf, size_t len)
{
    REMAT_NULL_RETURN(buf, NULL);
    if (!e && len)
        snprintf(buf, len, "?");
    REMAT_NULL_RETURN(e, buf);
    char sh[128];
    remat_shape_format(e->dtype, &e->shape, sh, sizeof sh);
    switch (e->kind) {
    case REMAT_RESIDUAL_ARGUMENT:
        snprintf(buf, len, "%s from the argument '%s'", sh, e->name ? e->name : "?");
        break;
    case REMAT_RESIDUAL_NAMED:
        snprintf(buf, len, "%s named '%s' at %s:%d", sh, e->name ? e->name : "?", short_path(e->loc.file),
                 e->loc.line);
        break;
    case REMAT_RESIDUAL_SNAPSHOT:
        snprintf(buf, len, "%s scan carry snapshots \u00d7%lld (%s)", sh, (long long)e->count,
                 e->detail ? e->detail : "?");
        break;
    default:
        snprintf(buf, len, "%s output of %s at %s:%d", sh, e->detail ? e->detail : remat_op_name(e->op),
                 short_path(e->loc.file), e->loc.line);
        break;
    }
    if (e->offload_dst && len > 0) { /* as JAX lists it: "f32<host>[4,6] output of device_put", then what it is */
        char *desc = rmi_strdup(buf);
        const char *br = strchr(sh, '[');
        if (desc && br)
            snprintf(buf, len, "%.*s<host>%s output of device_put (%s, offloaded to %s)", (int)(br - sh), sh, br,
                     desc + strlen(sh) + 1, e->offload_dst);
        rmi_free(desc);
    }
    return buf;
}

void remat_residual_list_print(const remat_residual_list *r, FILE *out)
{
    char line[512];
    REMAT_NULL_RETURN(r, );
    REMAT_NULL_RETURN(out, );
    for (int i = 0; i < r->n; i++)
        fprintf(out, "%s\n", remat_residual_format(&r->items[i], line, sizeof line));
}

void remat_residual_list_free(remat_residual_list *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        rmi_free((char *)r->items[i].name);
        rmi_free((char *)r->items[i].detail);
        rmi_free((char *)r->items[i].offload_dst);
    }
    rmi_free(r->items);
    rmi_free(r);
}
