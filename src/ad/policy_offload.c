/*
 * policy_offload.c — JAX's offload policies (jax/_src/ad_checkpoint.py:
 * SaveAndOffloadOnlyTheseNames, OffloadDotWithNoBatchDims, answering
 * Saveable, Recompute or Offloadable(src, dst)) and the text form of the
 * policies with arguments that remat_policy_named reads.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad/policy_impl.h"
#include "core/alloc.h"
#include "core/error.h"

/* JAX's memory kinds: the residual moves from the backend's memory to the
 * host; both host kinds are the slow tier here */
static const char *const dst_kinds[] = {"pinned_host", "unpinned_host"};

static remat_status check_kinds(const char *fn, const char *src, const char *dst, const char **dst_out)
{
    if (!src || !dst)
        return rmi_error(REMAT_ERR_NULL, "%s: offload_%s is NULL", fn, !src ? "src" : "dst");
    if (strcmp(src, "device") != 0)
        return rmi_error(REMAT_ERR_ARG, "%s: offload_src '%s' is not a memory kind residuals move from (expected device)",
                         fn, src);
    for (size_t i = 0; i < sizeof dst_kinds / sizeof *dst_kinds; i++)
        if (!strcmp(dst, dst_kinds[i])) {
            *dst_out = dst_kinds[i];
            return REMAT_OK;
        }
    return rmi_error(REMAT_ERR_ARG, "%s: offload_dst '%s' is not a memory kind residuals move to (expected "
                                    "pinned_host or unpinned_host)", fn, dst);
}

typedef struct {
    int n_save, n_off;
    char **names; /* the saved names, then the offloaded ones */
    const char *dst; /* one of dst_kinds */
} offload_ctx;

static void offload_free(void *vctx)
{
    offload_ctx *c = vctx;
    for (int i = 0; c->names && i < c->n_save + c->n_off; i++)
        rmi_free(c->names[i]);
    rmi_free(c->names);
    rmi_free(c);
}

static bool listed(char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return true;
    return false;
}

/* SaveAndOffloadOnlyTheseNames.__call__ */
static remat_policy_result names_decide(const remat_op_info *op, void *vctx, const char **dst)
{
    const offload_ctx *c = vctx;
    if (op->op != REMAT_OP_NAME || !op->name)
        return REMAT_POLICY_RECOMPUTE;
    if (listed(c->names, c->n_save, op->name))
        return REMAT_POLICY_SAVE;
    if (listed(c->names + c->n_save, c->n_off, op->name)) {
        if (dst)
            *dst = c->dst;
        return REMAT_POLICY_OFFLOAD;
    }
    return REMAT_POLICY_RECOMPUTE;
}

/* OffloadDotWithNoBatchDims.__call__ */
static remat_policy_result dots_decide(const remat_op_info *op, void *vctx, const char **dst)
{
    const offload_ctx *c = vctx;
    if (op->op == REMAT_OP_DOT_GENERAL && op->dot && op->dot->n_batch == 0) {
        if (dst)
            *dst = c->dst;
        return REMAT_POLICY_OFFLOAD;
    }
    return REMAT_POLICY_RECOMPUTE;
}

static void append(char *label, size_t cap, const char *s)
{
    size_t l = strlen(label);
    snprintf(label + l, cap - l, "%s", s);
}

remat_policy *remat_policy_save_and_offload_only_these_names(int n_save, const char *const *save, int n_offload,
                                                             const char *const *offload, const char *offload_src,
                                                             const char *offload_dst)
{
    static const char fn[] = "save_and_offload_only_these_names";
    const char *dst = NULL;
    if ((n_save > 0 && !save) || (n_offload > 0 && !offload)) {
        rmi_error(REMAT_ERR_NULL, "%s: names_which_can_be_%s is NULL", fn, !save && n_save > 0 ? "saved" : "offloaded");
        return NULL;
    }
    if (n_save < 0 || n_offload < 0) {
        rmi_error(REMAT_ERR_ARG, "%s: %d names to save, %d to offload", fn, n_save, n_offload);
        return NULL;
    }
    if (check_kinds(fn, offload_src, offload_dst, &dst) != REMAT_OK)
        return NULL;
    for (int i = 0; i < n_save + n_offload; i++)
        if (!(i < n_save ? save[i] : offload[i - n_save])) {
            rmi_error(REMAT_ERR_NULL, "%s: name %d of names_which_can_be_%s is NULL", fn, i < n_save ? i : i - n_save,
                      i < n_save ? "saved" : "offloaded");
            return NULL;
        }
    for (int i = 0; i < n_save; i++)
        for (int j = 0; j < n_offload; j++)
            if (!strcmp(save[i], offload[j])) { /* JAX's ValueError */
                rmi_error(REMAT_ERR_ARG,
                          "%s: the names should be exclusive: '%s' is in both names_which_can_be_saved and "
                          "names_which_can_be_offloaded", fn, save[i]);
                return NULL;
            }
    offload_ctx *c = rmi_calloc(1, sizeof *c);
    char **names = rmi_calloc((size_t)(n_save + n_offload + 1), sizeof *names);
    size_t cap = 160;
    for (int i = 0; i < n_save + n_offload; i++)
        cap += strlen(i < n_save ? save[i] : offload[i - n_save]) + 4;
    char *label = rmi_malloc(cap);
    int ok = c && names && label;
    if (c)
        c->names = names, c->dst = dst;
    for (int i = 0; ok && i < n_save + n_offload; i++) {
        ok = (names[i] = rmi_strdup(i < n_save ? save[i] : offload[i - n_save])) != NULL;
        if (ok)
            i < n_save ? c->n_save++ : c->n_off++;
    }
    remat_policy *p = NULL;
    if (ok) {
        snprintf(label, cap, "%s([", fn);
        for (int i = 0; i < n_save + n_offload; i++) {
            if (i == n_save)
                append(label, cap, n_save ? "], [" : "], [");
            else if (i)
                append(label, cap, ", ");
            append(label, cap, "'");
            append(label, cap, names[i]);
            append(label, cap, "'");
        }
        if (n_offload == 0)
            append(label, cap, "], [");
        append(label, cap, "], 'device', '");
        append(label, cap, dst);
        append(label, cap, "')");
        p = rmi_policy_new_deciding(label, names_decide, c, offload_free);
    }
    rmi_free(label);
    if (!p) {
        if (c)
            offload_free(c);
        else
            rmi_free(names);
        if (ok) /* remat_policy_new said why */
            return NULL;
        rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", fn);
    }
    return p;
}

remat_policy *remat_policy_offload_dot_with_no_batch_dims(const char *offload_src, const char *offload_dst)
{
    static const char fn[] = "offload_dot_with_no_batch_dims";
    const char *dst = NULL;
    if (check_kinds(fn, offload_src, offload_dst, &dst) != REMAT_OK)
        return NULL;
    offload_ctx *c = rmi_calloc(1, sizeof *c);
    if (!c) {
        rmi_error(REMAT_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    c->dst = dst;
    char label[96];
    snprintf(label, sizeof label, "%s('device', '%s')", fn, dst);
    remat_policy *p = rmi_policy_new_deciding(label, dots_decide, c, offload_free);
    if (!p)
        offload_free(c);
    return p;
}

/* ---- the text form ---- */

enum { MAX_ARGS = 8, MAX_ITEMS = 64 };

typedef struct {
    char key[64];        /* "" when positional */
    int is_list;
    int n;               /* items */
    char *items[MAX_ITEMS];
} parsed_arg;

typedef struct {
    const char *text, *at;
    parsed_arg args[MAX_ARGS];
    int n_args;
    char buf[4096]; /* the items' characters */
    size_t used;
} parser;

static void skip_space(parser *ps)
{
    while (isspace((unsigned char)*ps->at))
        ps->at++;
}

static remat_status bad(parser *ps, const char *why)
{
    return rmi_error(REMAT_ERR_ARG, "policy '%s': %s at character %d", ps->text, why, (int)(ps->at - ps->text) + 1);
}

/* a word (letters, digits, _ . / -) or a quoted string, into buf */
static remat_status word(parser *ps, char **out)
{
    skip_space(ps);
    char q = *ps->at == '\'' || *ps->at == '"' ? *ps->at++ : 0;
    const char *s = ps->at;
    if (q)
        while (*ps->at && *ps->at != q)
            ps->at++;
    else
        while (isalnum((unsigned char)*ps->at) || strchr("_./-", *ps->at))
            ps->at++;
    size_t len = (size_t)(ps->at - s);
    if (q && *ps->at != q)
        return bad(ps, "an unterminated quote");
    if (!q && len == 0)
        return bad(ps, "a name expected");
    if (ps->used + len + 1 > sizeof ps->buf)
        return bad(ps, "too long");
    memcpy(ps->buf + ps->used, s, len);
    ps->buf[ps->used + len] = 0;
    *out = ps->buf + ps->used;
    ps->used += len + 1;
    if (q)
        ps->at++;
    return REMAT_OK;
}

static remat_status one_arg(parser *ps, parsed_arg *a)
{
    skip_space(ps);
    const char *eq = ps->at;
    while (isalnum((unsigned char)*eq) || *eq == '_')
        eq++;
    const char *after = eq;
    while (isspace((unsigned char)*after))
        after++;
    if (*after == '=' && eq > ps->at && (size_t)(eq - ps->at) < sizeof a->key) {
        memcpy(a->key, ps->at, (size_t)(eq - ps->at));
        ps->at = after + 1;
        skip_space(ps);
    }
    if (*ps->at != '[') {
        a->n = 1;
        return word(ps, &a->items[0]);
    }
    a->is_list = 1;
    ps->at++;
    skip_space(ps);
    if (*ps->at == ']') {
        ps->at++;
        return REMAT_OK;
    }
    for (;;) {
        if (a->n == MAX_ITEMS)
            return bad(ps, "too many names");
        remat_status st = word(ps, &a->items[a->n++]);
        if (st != REMAT_OK)
            return st;
        skip_space(ps);
        if (*ps->at == ']') {
            ps->at++;
            return REMAT_OK;
        }
        if (*ps->at != ',')
            return bad(ps, "',' or ']' expected");
        ps->at++;
    }
}

/* "kind(arg, ...)": the kind into kind[] */
static remat_status parse(parser *ps, char *kind, size_t kind_len)
{
    skip_space(ps);
    const char *s = ps->at;
    while (isalnum((unsigned char)*ps->at) || *ps->at == '_')
        ps->at++;
    if (ps->at == s || (size_t)(ps->at - s) >= kind_len)
        return bad(ps, "a policy name expected");
    memcpy(kind, s, (size_t)(ps->at - s));
    kind[ps->at - s] = 0;
    skip_space(ps);
    if (*ps->at++ != '(')
        return bad(ps, "'(' expected");
    skip_space(ps);
    if (*ps->at != ')')
        for (;;) {
            if (ps->n_args == MAX_ARGS)
                return bad(ps, "too many arguments");
            remat_status st = one_arg(ps, &ps->args[ps->n_args++]);
            if (st != REMAT_OK)
                return st;
            skip_space(ps);
            if (*ps->at == ')')
                break;
            if (*ps->at != ',')
                return bad(ps, "',' or ')' expected");
            ps->at++;
        }
    ps->at++;
    skip_space(ps);
    if (*ps->at)
        return bad(ps, "text after the ')'");
    return REMAT_OK;
}

/* The argument of position pos or keyword key; NULL (and an error) when
 * missing or given twice. */
static const parsed_arg *arg_of(parser *ps, int pos, const char *key, int want_list)
{
    const parsed_arg *found = NULL;
    int p = 0, twice = 0;
    for (int i = 0; i < ps->n_args; i++) {
        const parsed_arg *a = &ps->args[i];
        int match = a->key[0] ? !strcmp(a->key, key) : p++ == pos;
        if (match)
            twice |= found != NULL, found = a;
    }
    if (!found || twice) {
        rmi_error(REMAT_ERR_ARG, "policy '%s': %s %s", ps->text, key, found ? "given twice" : "missing");
        return NULL;
    }
    if (!want_list && (found->is_list || found->n != 1)) {
        rmi_error(REMAT_ERR_ARG, "policy '%s': %s is one memory kind, not a list", ps->text, key);
        return NULL;
    }
    return found;
}

static int check_keys(parser *ps, const char *const *keys, int n_keys)
{
    for (int i = 0; i < ps->n_args; i++) {
        if (!ps->args[i].key[0])
            continue;
        int known = 0;
        for (int k = 0; k < n_keys; k++)
            known |= !strcmp(ps->args[i].key, keys[k]);
        if (!known) {
            rmi_error(REMAT_ERR_ARG, "policy '%s': unknown argument '%s'", ps->text, ps->args[i].key);
            return 0;
        }
    }
    return 1;
}

static remat_policy *build(parser *ps, const char *kind)
{
    static const char *const off_keys[] = {"names_which_can_be_saved", "names_which_can_be_offloaded", "offload_src",
                                           "offload_dst"};
    if (!strcmp(kind, "save_and_offload_only_these_names")) {
        if (!check_keys(ps, off_keys, 4))
            return NULL;
        if (ps->n_args != 4) {
            rmi_error(REMAT_ERR_ARG, "policy '%s': %s takes 4 arguments (%s, %s, %s, %s), %d given", ps->text, kind,
                      off_keys[0], off_keys[1], off_keys[2], off_keys[3], ps->n_args);
            return NULL;
        }
        const parsed_arg *s = arg_of(ps, 0, off_keys[0], 1), *o = s ? arg_of(ps, 1, off_keys[1], 1) : NULL;
        const parsed_arg *src = o ? arg_of(ps, 2, off_keys[2], 0) : NULL, *dst = src ? arg_of(ps, 3, off_keys[3], 0) : NULL;
        if (!dst)
            return NULL;
        return remat_policy_save_and_offload_only_these_names(s->n, (const char *const *)s->items, o->n,
                                                              (const char *const *)o->items, src->items[0],
                                                              dst->items[0]);
    }
    if (!strcmp(kind, "offload_dot_with_no_batch_dims")) {
        if (!check_keys(ps, off_keys + 2, 2))
            return NULL;
        if (ps->n_args != 2) {
            rmi_error(REMAT_ERR_ARG, "policy '%s': %s takes 2 arguments (offload_src, offload_dst), %d given",
                      ps->text, kind, ps->n_args);
            return NULL;
        }
        const parsed_arg *src = arg_of(ps, 0, off_keys[2], 0), *dst = src ? arg_of(ps, 1, off_keys[3], 0) : NULL;
        return dst ? remat_policy_offload_dot_with_no_batch_dims(src->items[0], dst->items[0]) : NULL;
    }
    remat_policy *(*names_fn)(int, const char *const *) =
        !strcmp(kind, "save_only_these_names")              ? remat_policy_save_only_these_names
        : !strcmp(kind, "save_any_names_but_these")         ? remat_policy_save_any_names_but_these
        : !strcmp(kind, "save_anything_except_these_names") ? remat_policy_save_anything_except_these_names
                                                            : NULL;
    if (!names_fn) {
        rmi_error(REMAT_ERR_ARG, "policy '%s': unknown policy '%s' (with arguments: save_only_these_names, "
                                 "save_any_names_but_these, save_anything_except_these_names, "
                                 "save_and_offload_only_these_names, offload_dot_with_no_batch_dims)",
                  ps->text, kind);
        return NULL;
    }
    const char *items[MAX_ARGS * MAX_ITEMS];
    int n = 0;
    for (int i = 0; i < ps->n_args; i++) { /* JAX's *names: each a name, a list spread */
        if (ps->args[i].key[0]) {
            rmi_error(REMAT_ERR_ARG, "policy '%s': %s takes names, not '%s='", ps->text, kind, ps->args[i].key);
            return NULL;
        }
        for (int k = 0; k < ps->args[i].n; k++)
            items[n++] = ps->args[i].items[k];
    }
    return names_fn(n, items);
}

/* the policies made from text, by text, for the process */
typedef struct interned {
    struct interned *next;
    char *text;
    remat_policy *p;
} interned;
static interned *interned_head;
static pthread_mutex_t interned_lock = PTHREAD_MUTEX_INITIALIZER;

const remat_policy *rmi_policy_parse_call(const char *text)
{
    pthread_mutex_lock(&interned_lock);
    remat_policy *found = NULL;
    for (interned *e = interned_head; e && !found; e = e->next)
        if (!strcmp(e->text, text))
            found = e->p;
    pthread_mutex_unlock(&interned_lock);
    if (found)
        return found;
    parser *ps = rmi_calloc(1, sizeof *ps);
    if (!ps) {
        rmi_error(REMAT_ERR_NOMEM, "policy '%s': out of memory", text);
        return NULL;
    }
    ps->text = ps->at = text;
    char kind[64];
    remat_policy *p = parse(ps, kind, sizeof kind) == REMAT_OK ? build(ps, kind) : NULL;
    rmi_free(ps);
    if (!p)
        return NULL;
    interned *e = rmi_malloc(sizeof *e);
    char *t = rmi_strdup(text);
    if (!e || !t) {
        rmi_free(e);
        rmi_free(t);
        remat_policy_free(p);
        rmi_error(REMAT_ERR_NOMEM, "policy '%s': out of memory", text);
        return NULL;
    }
    pthread_mutex_lock(&interned_lock);
    for (interned *o = interned_head; o && !found; o = o->next) /* another thread's, made meanwhile */
        if (!strcmp(o->text, text))
            found = o->p;
    if (!found) {
        rmi_policy_make_immortal(p);
        *e = (interned){.next = interned_head, .text = t, .p = p};
        interned_head = e;
    }
    pthread_mutex_unlock(&interned_lock);
    if (found) { /* another thread's copy won: this one was never handed out */
        rmi_free(e);
        rmi_free(t);
        remat_policy_free(p);
        return found;
    }
    return p;
}
