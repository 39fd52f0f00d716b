/* graph.c — the remat_fn object: node storage, errors, introspection, printing. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ad/graph_impl.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "core/exhaustive.h"

/* f->error when the message itself could not be copied (out of memory):
 * never freed; remat_last_error() still has the full message. */
static char nomem_error[] = "out of memory (the full message is in remat_last_error())";

static void set_error(remat_fn *f, remat_status st)
{
    f->status = st;
    if (f->error != nomem_error)
        rmi_free(f->error);
    f->error = rmi_strdup(remat_last_error());
    if (!f->error)
        f->error = nomem_error;
}

remat_fn *remat_fn_new(const char *name)
{
    remat_fn *f = rmi_calloc(1, sizeof *f);
    if (f)
        f->name = rmi_strdup(name ? name : "fn");
    if (!f || !f->name) {
        rmi_free(f);
        rmi_error(REMAT_ERR_NOMEM, "remat_fn_new: out of memory creating function '%s'", name ? name : "fn");
        return NULL;
    }
    f->refcount = 1;
    return f;
}

remat_fn *remat_fn_ref(remat_fn *f)
{
    if (f)
        f->refcount++;
    return f;
}

void remat_fn_free(remat_fn *f)
{
    if (!f || --f->refcount > 0)
        return;
    for (int32_t i = 0; i < f->n_nodes; i++) {
        const remat_node *n = &f->nodes[i];
        if (n->op == REMAT_OP_CHECKPOINT) {
            remat_fn_free(n->p.call->callee);
            remat_policy_free((remat_policy *)n->p.call->policy);
        } else if (n->op == REMAT_OP_HOP && n->p.hop.rules->release) {
            n->p.hop.rules->release(n->p.hop.data);
        }
    }
    rmi_arena_clear(&f->arena);
    rmi_free(f->nodes);
    rmi_free(f->args);
    rmi_free(f->outs);
    if (f->error != nomem_error)
        rmi_free(f->error);
    rmi_free(f->name);
    rmi_free(f);
}

const remat_node *rmi_fn_node(const remat_fn *f, remat_val v) { return &f->nodes[v]; }

const char *remat_fn_name(const remat_fn *f)
{
    REMAT_NULL_RETURN(f, "(null)");
    return f->name;
}

/* status and error are how a caller reads an error: for NULL they answer
 * without touching remat_last_error(), which may hold why f is NULL */
remat_status remat_fn_status(const remat_fn *f) { return f ? f->status : REMAT_ERR_NULL; }
const char *remat_fn_error(const remat_fn *f) { return f && f->error ? f->error : ""; }

void remat_fn_clear_error(remat_fn *f)
{
    if (!f)
        return;
    f->status = REMAT_OK;
    if (f->error != nomem_error)
        rmi_free(f->error);
    f->error = NULL;
}

void *rmi_fn_alloc(remat_fn *f, size_t bytes)
{
    void *p = rmi_arena_alloc(&f->arena, bytes);
    if (!p)
        rmi_fn_fail(f, REMAT_ERR_NOMEM, (remat_loc){0}, "function '%s': out of memory (%zu bytes of node data)",
                    f->name, bytes);
    return p;
}

const char *rmi_fn_strdup(remat_fn *f, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = rmi_fn_alloc(f, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int grow(void **p, int32_t *cap, int32_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    int32_t nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = rmi_realloc(*p, (size_t)nc * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = nc;
    return 1;
}

static remat_val nomem(remat_fn *f, const remat_node *proto, const char *what)
{
    return rmi_fn_fail(f, REMAT_ERR_NOMEM, proto->loc, "%s: out of memory adding %s to function '%s'",
                       remat_op_name((remat_op)proto->op), what, f->name);
}

remat_val rmi_fn_add_node(remat_fn *f, const remat_node *proto, int nin, const remat_val *in)
{
    for (int i = 0; f->status != REMAT_OK && i < nin; i++)
        if (in[i] == REMAT_NONE)
            return REMAT_NONE; /* an input failed to build (its error stands): propagate */
    int32_t *ins = NULL;
    if (nin > 0 && !(ins = rmi_fn_alloc(f, (size_t)nin * sizeof *ins)))
        return REMAT_NONE;
    for (int i = 0; i < nin; i++) {
        REMAT_ASSERT(in[i] >= 0 && in[i] < f->n_nodes);
        ins[i] = in[i];
    }
    if (!grow((void **)&f->nodes, &f->cap_nodes, f->n_nodes + 1, sizeof *f->nodes))
        return nomem(f, proto, "a node");
    if (proto->op == REMAT_OP_ARG && !grow((void **)&f->args, &f->cap_args, f->n_args + 1, sizeof *f->args))
        return nomem(f, proto, "an argument");
    remat_node *n = &f->nodes[f->n_nodes];
    *n = *proto;
    n->flags |= f->emit_flags;
    n->nin = nin;
    n->in = ins;
    if (n->op == REMAT_OP_ARG) {
        n->p.arg_pos = f->n_args;
        f->args[f->n_args++] = f->n_nodes;
    }
    return f->n_nodes++;
}

remat_val rmi_fn_fail(remat_fn *f, remat_status st, remat_loc loc, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rmi_error(st, "%s:%d: %s", loc.file ? loc.file : "?", loc.line, msg);
    if (f && f->status == REMAT_OK)
        set_error(f, st);
    return REMAT_NONE;
}

remat_val rmi_fn_null(remat_loc loc, const char *fn)
{
    return rmi_fn_fail(NULL, REMAT_ERR_NULL, loc, "%s: function is NULL", fn);
}

int rmi_fn_vals_ok(const remat_fn *f, int n, const remat_val *v)
{
    if (n > 0 && !v) {
        if (f->status == REMAT_OK)
            set_error((remat_fn *)f,
                      rmi_error(REMAT_ERR_NULL, "function '%s': the array of values is NULL", f->name));
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (v[i] >= 0 && v[i] < f->n_nodes)
            continue;
        /* REMAT_NONE propagates quietly when f already holds an error: it is
         * the result of a failed op, whose message stands. Passed to an f
         * with no error it failed elsewhere (or was never a value): say so
         * now rather than at remat_fn_output. Any other number never was a
         * value of f. */
        if (f->status == REMAT_OK) {
            if (v[i] == REMAT_NONE)
                rmi_error(REMAT_ERR_ARG,
                          "function '%s': operand %d is REMAT_NONE (the result of a failed op "
                          "whose error was cleared, or of another function)",
                          f->name, i);
            else
                rmi_error(REMAT_ERR_ARG, "function '%s': %d is not a value of this function", f->name, (int)v[i]);
            set_error((remat_fn *)f, REMAT_ERR_ARG);
        }
        return 0;
    }
    return 1;
}

const char *rmi_fn_fmt_val(const remat_fn *f, remat_val v, char *buf, size_t len)
{
    const remat_node *n = &f->nodes[v];
    return remat_shape_format((remat_dtype)n->dtype, &n->shape, buf, len);
}

remat_val remat_fn_output_at(remat_fn *f, remat_val v, remat_loc loc)
{
    if (!f)
        return rmi_fn_null(loc, "remat_fn_output");
    if (v == REMAT_NONE && f->status != REMAT_OK)
        return REMAT_NONE; /* the result of a failed op, whose error stands */
    if (!rmi_fn_vals_ok(f, 1, &v))
        return rmi_fn_fail(f, REMAT_ERR_ARG, loc, "output: invalid value %d", (int)v);
    if (!grow((void **)&f->outs, &f->cap_outs, f->n_outs + 1, sizeof *f->outs))
        return rmi_fn_fail(f, REMAT_ERR_NOMEM, loc, "output: out of memory adding an output to function '%s'",
                           f->name);
    f->outs[f->n_outs++] = v;
    return v;
}

int remat_fn_num_args(const remat_fn *f)
{
    REMAT_NULL_RETURN(f, 0);
    return f->n_args;
}

int remat_fn_num_outputs(const remat_fn *f)
{
    REMAT_NULL_RETURN(f, 0);
    return f->n_outs;
}

int remat_fn_num_nodes(const remat_fn *f)
{
    REMAT_NULL_RETURN(f, 0);
    return f->n_nodes;
}

remat_val remat_fn_arg(const remat_fn *f, int i)
{
    REMAT_NULL_RETURN(f, REMAT_NONE);
    return i >= 0 && i < f->n_args ? f->args[i] : REMAT_NONE;
}

remat_val remat_fn_out(const remat_fn *f, int i)
{
    REMAT_NULL_RETURN(f, REMAT_NONE);
    return i >= 0 && i < f->n_outs ? f->outs[i] : REMAT_NONE;
}

const char *remat_fn_arg_name(const remat_fn *f, int i)
{
    REMAT_NULL_RETURN(f, NULL);
    remat_val v = remat_fn_arg(f, i);
    return v == REMAT_NONE ? NULL : f->nodes[v].name;
}

static int val_ok(const remat_fn *f, remat_val v, const char *what)
{
    if (f && v >= 0 && v < f->n_nodes)
        return 1;
    rmi_error(f ? REMAT_ERR_ARG : REMAT_ERR_NULL, "%s: %s", what,
              f ? "value is not a node of this function" : "function is NULL");
    return 0;
}

remat_dtype remat_val_dtype(const remat_fn *f, remat_val v)
{
    return val_ok(f, v, "remat_val_dtype") ? (remat_dtype)f->nodes[v].dtype : REMAT_DTYPE_COUNT;
}

remat_shape remat_val_shape(const remat_fn *f, remat_val v)
{
    if (!val_ok(f, v, "remat_val_shape"))
        return (remat_shape){.rank = -1};
    return f->nodes[v].shape;
}

remat_op remat_val_op(const remat_fn *f, remat_val v)
{
    return val_ok(f, v, "remat_val_op") ? (remat_op)f->nodes[v].op : REMAT_OP_COUNT;
}

uint8_t *rmi_fn_live_mask(const remat_fn *f)
{
    uint8_t *live = rmi_calloc((size_t)f->n_nodes + 1, 1);
    if (!live)
        return NULL;
    for (int i = 0; i < f->n_outs; i++)
        live[f->outs[i]] = 1;
    for (int32_t v = f->n_nodes - 1; v >= 0; v--)
        if (live[v])
            for (int k = 0; k < f->nodes[v].nin; k++)
                live[f->nodes[v].in[k]] = 1;
    return live;
}

int rmi_fn_residual_mask(const remat_fn *f, const uint8_t *live, uint8_t *res)
{
    int count = 0;
    memset(res, 0, (size_t)f->n_nodes + 1);
    for (int32_t v = 0; v < f->n_nodes; v++) {
        const remat_node *n = &f->nodes[v];
        if (!live[v] || !(n->flags & REMAT_NODE_BWD))
            continue;
        for (int k = 0; k < n->nin; k++) {
            const remat_node *a = &f->nodes[n->in[k]];
            if (!(a->flags & REMAT_NODE_BWD) && a->op != REMAT_OP_CONSTANT && !res[n->in[k]]) {
                res[n->in[k]] = 1;
                count++;
            }
        }
    }
    return count;
}

void rmi_node_op_info(const remat_fn *f, remat_val v, remat_op_info *info, remat_dtype *in_dtypes,
                      remat_shape *in_shapes)
{
    const remat_node *n = &f->nodes[v];
    for (int i = 0; i < n->nin; i++) {
        in_dtypes[i] = (remat_dtype)f->nodes[n->in[i]].dtype;
        in_shapes[i] = f->nodes[n->in[i]].shape;
    }
    *info = (remat_op_info){
        .op = (remat_op)n->op,
        .dtype = (remat_dtype)n->dtype,
        .shape = &n->shape,
        .n_inputs = n->nin,
        .in_dtypes = in_dtypes,
        .in_shapes = in_shapes,
        .dot = n->op == REMAT_OP_DOT_GENERAL ? n->p.dot : NULL,
        .name = n->op == REMAT_OP_NAME ? n->name : NULL,
    };
}

/* A copy in dst's arena; NULL when out of memory (recorded on dst), and
 * *ok cleared. */
static void *dup_into(remat_fn *dst, const void *src, size_t bytes, int *ok)
{
    void *d = rmi_fn_alloc(dst, bytes);
    if (d)
        memcpy(d, src, bytes);
    else
        *ok = 0;
    return d;
}

/* Parameters that point into the source's arena are copied into dst's; by
 * parameter kind, so an op with a new kind of parameter fails to build here. */
REMAT_EXHAUSTIVE_BEGIN
remat_val rmi_fn_copy_node_with_inputs(remat_fn *dst, const remat_fn *src, remat_val v, const remat_val *ins,
                                       uint8_t add_flags)
{
    const remat_node *n = &src->nodes[v];
    remat_node proto = *n;
    int ok = 1;
    proto.flags |= add_flags;
    proto.name = n->name ? dup_into(dst, n->name, strlen(n->name) + 1, &ok) : NULL;
    size_t nbytes = (size_t)remat_shape_numel(&n->shape) * remat_dtype_size((remat_dtype)n->dtype);
    remat_call_params *cp = NULL;
    if (n->op == REMAT_OP_CONSTANT && n->data)
        proto.data = dup_into(dst, n->data, nbytes ? nbytes : 1, &ok);
    switch (remat_op_param_of((remat_op)n->op)) {
    case REMAT_OPP_PERM:
        proto.p.perm = dup_into(dst, n->p.perm, sizeof(int) * REMAT_MAX_RANK, &ok);
        break;
    case REMAT_OPP_BDIMS:
        proto.p.bdims = dup_into(dst, n->p.bdims, sizeof(int) * REMAT_MAX_RANK, &ok);
        break;
    case REMAT_OPP_DOT:
        proto.p.dot = dup_into(dst, n->p.dot, sizeof *n->p.dot, &ok);
        break;
    case REMAT_OPP_SLICE:
        proto.p.slice = dup_into(dst, n->p.slice, sizeof *n->p.slice, &ok);
        break;
    case REMAT_OPP_PAD:
        proto.p.pad = dup_into(dst, n->p.pad, sizeof *n->p.pad, &ok);
        break;
    case REMAT_OPP_CALL: /* references taken below, once the node exists */
        proto.p.call = cp = dup_into(dst, n->p.call, sizeof *n->p.call, &ok);
        break;
    case REMAT_OPP_HOP: /* retained below, once the node exists */
        break;
    case REMAT_OPP_NONE:
    case REMAT_OPP_FILL:
    case REMAT_OPP_ARG_POS:
    case REMAT_OPP_OUTPUT:
    case REMAT_OPP_AXIS:
    case REMAT_OPP_INT_EXPONENT:
    case REMAT_OPP_EXPONENT:
    case REMAT_OPP_AXES:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_CUSTOM: /* the caller's, not the graph's */
        break;
    case REMAT_OPP_COUNT:
        REMAT_UNREACHABLE("copy_node: a node with an op outside the table");
    }
    remat_val r = ok ? rmi_fn_add_node(dst, &proto, n->nin, ins) : REMAT_NONE;
    if (r == REMAT_NONE)
        return r;
    /* references are taken once the node exists, so a failed copy owns none */
    if (cp) {
        remat_fn_ref(cp->callee);
        remat_policy_ref(cp->policy);
    } else if (n->op == REMAT_OP_HOP && n->p.hop.rules->retain) {
        dst->nodes[r].p.hop.data = n->p.hop.rules->retain(n->p.hop.data);
    }
    return r;
}
REMAT_EXHAUSTIVE_END

remat_val rmi_fn_copy_node(remat_fn *dst, const remat_fn *src, remat_val v, const remat_val *map,
                           uint8_t add_flags)
{
    const remat_node *n = &src->nodes[v];
    remat_val small[16] = {0};
    remat_val *ins = n->nin <= 16 ? small : rmi_malloc(sizeof *ins * (size_t)n->nin);
    if (!ins)
        return rmi_fn_fail(dst, REMAT_ERR_NOMEM, n->loc, "%s: out of memory copying a node into function '%s'",
                           remat_op_name((remat_op)n->op), dst->name);
    for (int i = 0; i < n->nin; i++)
        ins[i] = map[n->in[i]]; /* REMAT_NONE after a failure in dst: rmi_fn_add_node propagates it */
    remat_val r = rmi_fn_copy_node_with_inputs(dst, src, v, ins, add_flags);
    if (ins != small)
        rmi_free(ins);
    return r;
}

void remat_fn_print(const remat_fn *f, FILE *out)
{
    char buf[128];
    REMAT_NULL_RETURN(f, );
    REMAT_NULL_RETURN(out, );
    fprintf(out, "{ lambda ; ");
    for (int i = 0; i < f->n_args; i++)
        fprintf(out, "%%%d:%s%s", f->args[i], rmi_fn_fmt_val(f, f->args[i], buf, sizeof buf),
                i + 1 < f->n_args ? " " : "");
    fprintf(out, ". let   # %s\n", f->name);
    for (int32_t v = 0; v < f->n_nodes; v++) {
        const remat_node *n = &f->nodes[v];
        if (n->op == REMAT_OP_ARG)
            continue;
        fprintf(out, "    %%%d:%s = %s", v, rmi_fn_fmt_val(f, v, buf, sizeof buf), remat_op_name((remat_op)n->op));
        if (n->op == REMAT_OP_CONSTANT && !n->data)
            fprintf(out, "[%g]", n->p.fill);
        if (n->name)
            fprintf(out, "[name=%s]", n->name);
        for (int i = 0; i < n->nin; i++)
            fprintf(out, " %%%d", n->in[i]);
        if (n->flags & REMAT_NODE_RECOMPUTE)
            fprintf(out, "   # recompute");
        else if (n->flags & REMAT_NODE_BWD)
            fprintf(out, "   # bwd");
        fputc('\n', out);
    }
    fprintf(out, "  in (");
    for (int i = 0; i < f->n_outs; i++)
        fprintf(out, "%%%d%s", f->outs[i], i + 1 < f->n_outs ? ", " : "");
    fprintf(out, ") }\n");
}
