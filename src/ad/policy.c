/* policy.c — checkpoint save policies with jax.checkpoint_policies semantics. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"
#include "ad/policy_impl.h"

typedef remat_policy_result (*decide_fn)(const remat_op_info *op, void *ctx, const char **dst);

struct remat_policy {
    int refcount; /* < 0: immortal built-in */
    const char *label;
    remat_policy_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
    decide_fn decide; /* a policy that may offload (policy_offload.c); fn is unused then */
};

static bool nothing(const remat_op_info *op, void *ctx) { return false; }
static bool everything(const remat_op_info *op, void *ctx) { return true; }
static bool dots(const remat_op_info *op, void *ctx) { return op->op == REMAT_OP_DOT_GENERAL; }

/* jax: dot_general whose dimension numbers have no batch dims on either side */
static bool dots_no_batch(const remat_op_info *op, void *ctx)
{
    return op->op == REMAT_OP_DOT_GENERAL && op->dot && op->dot->n_batch == 0;
}

static const struct remat_policy builtin[] = {
    {-1, "nothing_saveable", nothing, NULL, NULL, NULL},
    {-1, "everything_saveable", everything, NULL, NULL, NULL},
    {-1, "dots_saveable", dots, NULL, NULL, NULL},
    {-1, "dots_with_no_batch_dims_saveable", dots_no_batch, NULL, NULL, NULL},
};
const remat_policy *const remat_nothing_saveable = &builtin[0];
const remat_policy *const remat_everything_saveable = &builtin[1];
const remat_policy *const remat_dots_saveable = &builtin[2];
const remat_policy *const remat_dots_with_no_batch_dims_saveable = &builtin[3];

/* jax.checkpoint_policies' names of the built-ins, aliases after */
static const struct {
    const char *name;
    int builtin;
} names_of[] = {
    {"nothing_saveable", 0},
    {"everything_saveable", 1},
    {"dots_saveable", 2},
    {"checkpoint_dots", 2},
    {"dots_with_no_batch_dims_saveable", 3},
    {"checkpoint_dots_with_no_batch_dims", 3},
};

const remat_policy *remat_policy_named(const char *name)
{
    REMAT_NULL_RETURN(name, NULL);
    for (size_t i = 0; i < sizeof names_of / sizeof *names_of; i++)
        if (!strcmp(name, names_of[i].name))
            return &builtin[names_of[i].builtin];
    if (strchr(name, '('))
        return rmi_policy_parse_call(name);
    rmi_error(REMAT_ERR_ARG,
              "unknown policy '%s' (expected nothing_saveable, everything_saveable, dots_saveable, checkpoint_dots, "
              "dots_with_no_batch_dims_saveable, checkpoint_dots_with_no_batch_dims, or one with arguments: "
              "save_only_these_names(...), save_any_names_but_these(...), save_anything_except_these_names(...), "
              "save_and_offload_only_these_names(...), offload_dot_with_no_batch_dims(src, dst))",
              name);
    return NULL;
}

remat_policy *remat_policy_new(const char *label, remat_policy_fn fn, void *ctx, void (*free_ctx)(void *))
{
    REMAT_NULL_RETURN(fn, NULL);
    remat_policy *p = rmi_calloc(1, sizeof *p);
    char *l = rmi_strdup(label ? label : "custom");
    if (!p || !l) {
        rmi_free(p);
        rmi_free(l);
        rmi_error(REMAT_ERR_NOMEM, "policy '%s': out of memory", label ? label : "custom");
        return NULL;
    }
    *p = (remat_policy){.refcount = 1, .label = l, .fn = fn, .ctx = ctx, .free_ctx = free_ctx};
    return p;
}

remat_policy *remat_policy_ref(const remat_policy *cp)
{
    remat_policy *p = (remat_policy *)cp;
    if (p && p->refcount > 0)
        p->refcount++;
    return p;
}

void remat_policy_free(remat_policy *p)
{
    if (!p || p->refcount < 0 || --p->refcount > 0)
        return;
    if (p->free_ctx)
        p->free_ctx(p->ctx);
    rmi_free((char *)p->label);
    rmi_free(p);
}

const char *remat_policy_label(const remat_policy *p) { return p ? p->label : "nothing_saveable"; }

remat_policy_result rmi_policy_decide(const remat_policy *p, const remat_op_info *op, const char **dst)
{
    if (dst)
        *dst = NULL;
    if (!p)
        p = remat_nothing_saveable;
    if (p->decide)
        return p->decide(op, p->ctx, dst);
    return p->fn(op, p->ctx) ? REMAT_POLICY_SAVE : REMAT_POLICY_RECOMPUTE;
}

remat_policy_result remat_policy_decide(const remat_policy *p, const remat_op_info *op)
{
    REMAT_NULL_RETURN(op, REMAT_POLICY_RECOMPUTE);
    return rmi_policy_decide(p, op, NULL);
}

bool remat_policy_allows(const remat_policy *p, const remat_op_info *op)
{
    REMAT_NULL_RETURN(op, false);
    return rmi_policy_decide(p, op, NULL) != REMAT_POLICY_RECOMPUTE;
}

remat_policy *rmi_policy_new_deciding(const char *label, decide_fn decide, void *ctx, void (*free_ctx)(void *))
{
    remat_policy *p = remat_policy_new(label, nothing, ctx, free_ctx);
    if (p)
        p->decide = decide;
    return p;
}

void rmi_policy_make_immortal(remat_policy *p)
{
    p->refcount = -1;
}

/* ---- name-based policies ---- */
typedef enum {
    NAMES_ONLY,      /* save_only_these_names */
    NAMES_BUT,       /* save_any_names_but_these */
    NAMES_ANYTHING,  /* save_anything_except_these_names */
} names_kind;

static const char *const names_label[] = {"save_only_these_names(", "save_any_names_but_these(",
                                          "save_anything_except_these_names("};

typedef struct {
    int n;
    char **names;
    names_kind kind;
} names_ctx;

static void names_free(void *vctx)
{
    names_ctx *c = vctx;
    for (int i = 0; i < c->n; i++)
        rmi_free(c->names[i]);
    rmi_free(c->names);
    rmi_free(c);
}

static bool names_pred(const remat_op_info *op, void *vctx)
{
    const names_ctx *c = vctx;
    if (op->op != REMAT_OP_NAME || !op->name)
        return c->kind == NAMES_ANYTHING;
    bool listed = false;
    for (int i = 0; i < c->n && !listed; i++)
        listed = strcmp(c->names[i], op->name) == 0;
    return c->kind == NAMES_ONLY ? listed : !listed;
}

/* fn: the public function, for the messages */
static remat_policy *names_policy(const char *fn, int n, const char *const *names, names_kind kind)
{
    if (n > 0 && !names) {
        rmi_error(REMAT_ERR_NULL, "%s: names is NULL", fn);
        return NULL;
    }
    if (n < 0) {
        rmi_error(REMAT_ERR_ARG, "%s: %d names", fn, n);
        return NULL;
    }
    names_ctx *c = rmi_calloc(1, sizeof *c);
    if (!c) {
        rmi_error(REMAT_ERR_NOMEM, "name policy: out of memory");
        return NULL;
    }
    c->kind = kind;
    c->names = rmi_calloc((size_t)(n ? n : 1), sizeof *c->names);
    size_t lab = strlen(names_label[kind]) + 2;
    for (int i = 0; c->names && i < n; i++) {
        c->names[i] = rmi_strdup(names[i] ? names[i] : "");
        if (!c->names[i])
            break;
        c->n++;
        lab += strlen(names[i] ? names[i] : "") + 4;
    }
    char *label = rmi_malloc(lab);
    if (!c->names || c->n != n || !label) {
        rmi_free(label);
        names_free(c);
        rmi_error(REMAT_ERR_NOMEM, "name policy: out of memory");
        return NULL;
    }
    strcpy(label, names_label[kind]);
    for (int i = 0; i < n; i++) {
        strcat(label, i ? ", '" : "'");
        strcat(label, c->names[i]);
        strcat(label, "'");
    }
    strcat(label, ")");
    remat_policy *p = remat_policy_new(label, names_pred, c, names_free);
    rmi_free(label);
    if (!p)
        names_free(c);
    return p;
}

remat_policy *remat_policy_save_only_these_names(int n, const char *const *names)
{
    return names_policy(__func__, n, names, NAMES_ONLY);
}

remat_policy *remat_policy_save_any_names_but_these(int n, const char *const *names)
{
    return names_policy(__func__, n, names, NAMES_BUT);
}

remat_policy *remat_policy_save_anything_except_these_names(int n, const char *const *names)
{
    return names_policy(__func__, n, names, NAMES_ANYTHING);
}

/* ---- combinator ---- */
typedef struct {
    remat_policy *a, *b;
} both_ctx;

/* JAX: policy_1(...) or policy_2(...): the first answer that is not
 * Recompute (an Offloadable is truthy) */
static remat_policy_result both_decide(const remat_op_info *op, void *vctx, const char **dst)
{
    const both_ctx *c = vctx;
    remat_policy_result r = rmi_policy_decide(c->a, op, dst);
    return r != REMAT_POLICY_RECOMPUTE ? r : rmi_policy_decide(c->b, op, dst);
}

static void both_free(void *vctx)
{
    both_ctx *c = vctx;
    remat_policy_free(c->a);
    remat_policy_free(c->b);
    rmi_free(c);
}

remat_policy *remat_policy_save_from_both(const remat_policy *a, const remat_policy *b)
{
    REMAT_NULL_RETURN(a, NULL);
    REMAT_NULL_RETURN(b, NULL);
    both_ctx *c = rmi_malloc(sizeof *c);
    if (!c) {
        rmi_error(REMAT_ERR_NOMEM, "save_from_both: out of memory");
        return NULL;
    }
    c->a = remat_policy_ref(a);
    c->b = remat_policy_ref(b);
    char label[512];
    snprintf(label, sizeof label, "save_from_both(%s, %s)", a->label, b->label);
    remat_policy *p = rmi_policy_new_deciding(label, both_decide, c, both_free);
    if (!p)
        both_free(c);
    return p;
}
