/* memo.c — translated lane programs kept per body for the process (lanes.h). */
#include "lanes/lanes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "ad/node.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/exhaustive.h"

/* Keys and programs kept at most (a fit's bodies take well under 1 MB each). */
#define LANES_MEMO_MAX_BYTES ((size_t)64 << 20)

/* ---- the key ---- */

void rmi_lanes_key_put(lanes_key *k, const void *v, size_t n)
{
    if (!k->ok || n == 0) /* nothing (v may be NULL: a scalar's dims, an empty list) */
        return;
    if (k->len + n > k->cap) {
        size_t nc = k->cap ? 2 * k->cap : 4096;
        while (nc < k->len + n)
            nc *= 2;
        unsigned char *q = rmi_realloc(k->p, nc);
        if (!q) {
            k->ok = false;
            return;
        }
        k->p = q, k->cap = nc;
    }
    memcpy(k->p + k->len, v, n);
    k->len += n;
}

static void put_i64(lanes_key *k, int64_t v) { rmi_lanes_key_put(k, &v, sizeof v); }

static void put_shape(lanes_key *k, const remat_shape *s)
{
    put_i64(k, s->rank);
    rmi_lanes_key_put(k, s->dims, sizeof *s->dims * (size_t)s->rank);
}

REMAT_EXHAUSTIVE_BEGIN
/* A node's parameter, field by field (structs beyond the rank may hold
 * anything). Custom ops, higher-order primitives and dot_general are never
 * translated (the body is declined whatever their parameters), so their
 * pointers stand for them. */
static void put_param(lanes_key *k, const remat_fn *f, const remat_node *N)
{
    const int r = N->shape.rank;
    switch (remat_op_param_of((remat_op)N->op)) {
    case REMAT_OPP_NONE: break;
    case REMAT_OPP_FILL: rmi_lanes_key_put(k, &N->p.fill, sizeof N->p.fill); break;
    case REMAT_OPP_EXPONENT: rmi_lanes_key_put(k, &N->p.exponent, sizeof N->p.exponent); break;
    case REMAT_OPP_ARG_POS: put_i64(k, N->p.arg_pos); break;
    case REMAT_OPP_OUTPUT: put_i64(k, N->p.output); break;
    case REMAT_OPP_AXIS: put_i64(k, N->p.axis); break;
    case REMAT_OPP_INT_EXPONENT: put_i64(k, N->p.int_exponent); break;
    case REMAT_OPP_AXES: put_i64(k, N->p.axes_mask); break;
    case REMAT_OPP_SOLVE: put_i64(k, N->p.solve_transpose); break;
    case REMAT_OPP_PERM: rmi_lanes_key_put(k, N->p.perm, sizeof *N->p.perm * (size_t)r); break;
    case REMAT_OPP_BDIMS:
        rmi_lanes_key_put(k, N->p.bdims, sizeof *N->p.bdims * (size_t)rmi_fn_node(f, N->in[0])->shape.rank);
        break;
    case REMAT_OPP_SLICE:
        rmi_lanes_key_put(k, N->p.slice->start, sizeof(int64_t) * (size_t)r);
        rmi_lanes_key_put(k, N->p.slice->limit, sizeof(int64_t) * (size_t)r);
        rmi_lanes_key_put(k, N->p.slice->stride, sizeof(int64_t) * (size_t)r);
        break;
    case REMAT_OPP_PAD:
        rmi_lanes_key_put(k, N->p.pad->low, sizeof(int64_t) * (size_t)r);
        rmi_lanes_key_put(k, N->p.pad->high, sizeof(int64_t) * (size_t)r);
        rmi_lanes_key_put(k, N->p.pad->interior, sizeof(int64_t) * (size_t)r);
        break;
    case REMAT_OPP_CALL: rmi_lanes_key_fn(k, N->p.call->callee); break; /* inlined: the policy is not read */
    case REMAT_OPP_DOT: rmi_lanes_key_put(k, &N->p.dot, sizeof N->p.dot); break;
    case REMAT_OPP_CUSTOM:
        rmi_lanes_key_put(k, &N->p.custom, sizeof N->p.custom);
        k->opaque = true;
        break;
    case REMAT_OPP_HOP:
        k->opaque = true;
        rmi_lanes_key_put(k, &N->p.hop.rules, sizeof N->p.hop.rules);
        rmi_lanes_key_put(k, &N->p.hop.data, sizeof N->p.hop.data);
        break;
    case REMAT_OPP_COUNT: REMAT_UNREACHABLE("lanes memo: no parameter kind");
    }
}
REMAT_EXHAUSTIVE_END

/* Names and source locations are left out (neither the translator nor the
 * compiler reads them), flags unless asked for. */
void rmi_lanes_key_fn(lanes_key *k, const remat_fn *f)
{
    const int32_t nn = remat_fn_num_nodes(f), no = remat_fn_num_outputs(f);
    put_i64(k, nn), put_i64(k, remat_fn_num_args(f)), put_i64(k, no);
    for (int i = 0; i < no; i++)
        put_i64(k, remat_fn_out(f, i));
    for (int32_t v = 0; k->ok && v < nn; v++) {
        const remat_node *N = rmi_fn_node(f, v);
        const int32_t head[4] = {N->op, N->dtype, N->nin, k->flags ? N->flags : 0};
        rmi_lanes_key_put(k, head, sizeof head);
        rmi_lanes_key_put(k, N->in, sizeof *N->in * (size_t)N->nin);
        put_shape(k, &N->shape);
        put_param(k, f, N);
        if (N->op == REMAT_OP_CONSTANT) {
            put_i64(k, N->data != NULL);
            if (N->data)
                rmi_lanes_key_put(k, N->data,
                                  (size_t)remat_shape_numel(&N->shape) * remat_dtype_size((remat_dtype)N->dtype));
        }
    }
}

void rmi_lanes_key_descs(lanes_key *k, const scan_desc *d, int n)
{
    put_i64(k, n);
    for (int i = 0; i < n; i++) {
        put_i64(k, d[i].dt);
        put_shape(k, &d[i].shape);
    }
}

void rmi_lanes_key_vjp(lanes_key *k, const scan_body_vjp *v)
{
    put_i64(k, v != NULL);
    if (!v)
        return;
    put_i64(k, v->n_res);
    rmi_lanes_key_put(k, v->res_arg, sizeof *v->res_arg * (size_t)v->n_res);
    rmi_lanes_key_fn(k, v->fwd);
    rmi_lanes_key_fn(k, v->bwd);
}

void rmi_lanes_key_free(lanes_key *k)
{
    rmi_free(k->p);
    *k = (lanes_key){0};
}

/* ---- the table ---- */

struct lanes_memo_entry {
    uint64_t hash;
    size_t len;
    unsigned char *key;
    lanes_memo_val val;
    remat_lane_fn code[2 * LKI_COUNT]; /* with has_code */
    int n_code;
    bool has_code;
    struct lanes_memo_entry *next;
};

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static lanes_memo_entry *memo_head;
static size_t memo_bytes;
static atomic_llong n_translated, n_reused, n_code_reused;

static uint64_t key_hash(const lanes_key *k)
{
    uint64_t h = 14695981039346656037ull;
    size_t i = 0;
    for (; i + 8 <= k->len; i += 8) { /* a word at a time: keys run to tens of kB */
        uint64_t w;
        memcpy(&w, k->p + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    for (; i < k->len; i++)
        h = (h ^ k->p[i]) * 1099511628211ull;
    return h;
}

static lanes_memo_entry *lookup(const lanes_key *k, uint64_t h)
{
    for (lanes_memo_entry *e = memo_head; e; e = e->next)
        if (e->hash == h && e->len == k->len && !memcmp(e->key, k->p, k->len))
            return e;
    return NULL;
}

lanes_memo_entry *rmi_lanes_memo_find(const lanes_key *k, lanes_memo_val *out)
{
    if (!k->ok)
        return NULL;
    const uint64_t h = key_hash(k);
    pthread_mutex_lock(&memo_lock);
    lanes_memo_entry *e = lookup(k, h);
    if (e)
        *out = e->val;
    pthread_mutex_unlock(&memo_lock);
    if (e)
        atomic_fetch_add(&n_reused, 1);
    return e;
}

/* The bytes a copy of view S takes (programs, their instructions and
 * buffer tables, lane strides), and the copy into mem. */
static size_t view_bytes(const scan_lanes *S)
{
    size_t b = sizeof *S->progs * (size_t)S->n_progs + sizeof *S->lane_bytes * (size_t)(S->base[LB_KINDS] + 1);
    for (int i = 0; i < S->n_progs; i++)
        b += sizeof *S->progs[i].ins * (size_t)S->progs[i].n_ins + sizeof *S->progs[i].bufs * (size_t)S->progs[i].n_bufs;
    return b;
}

static char *take(char **at, size_t bytes)
{
    char *p = *at;
    *at += (bytes + 15) / 16 * 16;
    return p;
}

static void view_copy(scan_lanes *dst, const scan_lanes *S, char **at)
{
    *dst = *S;
    memset(dst->fn, 0, sizeof dst->fn);
    remat_lane_program *progs = (remat_lane_program *)take(at, sizeof *progs * (size_t)S->n_progs);
    const remat_lane_buf *last_src = NULL;
    remat_lane_buf *last_dst = NULL;
    for (int i = 0; i < S->n_progs; i++) {
        const remat_lane_program *p = &S->progs[i];
        progs[i] = *p;
        remat_lane_ins *ins = (remat_lane_ins *)take(at, sizeof *ins * (size_t)p->n_ins);
        memcpy(ins, p->ins, sizeof *ins * (size_t)p->n_ins);
        progs[i].ins = ins;
        if (p->bufs != last_src) { /* a view's programs mostly share one table */
            last_dst = (remat_lane_buf *)take(at, sizeof *last_dst * (size_t)p->n_bufs);
            memcpy(last_dst, p->bufs, sizeof *last_dst * (size_t)p->n_bufs);
            last_src = p->bufs;
        }
        progs[i].bufs = last_dst;
    }
    dst->progs = progs;
    const size_t nlb = (size_t)(S->base[LB_KINDS] + 1);
    int64_t *lb = (int64_t *)take(at, sizeof *lb * nlb);
    memcpy(lb, S->lane_bytes, sizeof *lb * nlb);
    dst->lane_bytes = lb;
}

lanes_memo_entry *rmi_lanes_memo_add(const lanes_key *k, const lanes_memo_val *v)
{
    if (!k->ok)
        return NULL;
    REMAT_ASSERT(v->n_views >= 1 && v->n_views <= 2);
    size_t bytes = (k->len + 15) / 16 * 16;
    for (int i = 0; i < v->n_views; i++)
        bytes += view_bytes(&v->view[i]) + 16 * (size_t)(2 * v->view[i].n_progs + 2); /* take's rounding */
    const uint64_t h = key_hash(k);
    pthread_mutex_lock(&memo_lock);
    lanes_memo_entry *e = lookup(k, h);
    const bool room = !e && memo_bytes + bytes <= LANES_MEMO_MAX_BYTES;
    pthread_mutex_unlock(&memo_lock);
    if (e || !room)
        return e;
    lanes_memo_entry *n = rmi_calloc(1, sizeof *n);
    char *mem = n ? rmi_malloc(bytes) : NULL;
    if (!mem) {
        rmi_free(n);
        return NULL;
    }
    char *at = mem;
    n->hash = h, n->len = k->len;
    n->key = (unsigned char *)take(&at, k->len);
    memcpy(n->key, k->p, k->len);
    n->val = *v;
    for (int i = 0; i < v->n_views; i++)
        view_copy(&n->val.view[i], &v->view[i], &at);
    REMAT_ASSERT((size_t)(at - mem) <= bytes);
    pthread_mutex_lock(&memo_lock);
    e = lookup(k, h); /* another thread's, kept meanwhile */
    if (!e && memo_bytes + bytes <= LANES_MEMO_MAX_BYTES) { /* other bodies may have filled it meanwhile */
        n->next = memo_head;
        memo_head = e = n;
        memo_bytes += bytes;
        n = NULL;
    }
    pthread_mutex_unlock(&memo_lock);
    if (n) {
        rmi_free(mem);
        rmi_free(n);
    }
    return e;
}

bool rmi_lanes_memo_code(lanes_memo_entry *e, int n, remat_lane_fn *fn)
{
    pthread_mutex_lock(&memo_lock);
    const bool has = e->has_code && e->n_code == n;
    if (has)
        memcpy(fn, e->code, sizeof *fn * (size_t)n);
    pthread_mutex_unlock(&memo_lock);
    if (has)
        atomic_fetch_add(&n_code_reused, 1);
    return has;
}

void rmi_lanes_memo_set_code(lanes_memo_entry *e, int n, const remat_lane_fn *fn)
{
    REMAT_ASSERT(n >= 1 && n <= 2 * LKI_COUNT);
    pthread_mutex_lock(&memo_lock);
    if (!e->has_code) {
        memcpy(e->code, fn, sizeof *fn * (size_t)n);
        e->n_code = n;
        e->has_code = true;
    }
    pthread_mutex_unlock(&memo_lock);
}

void rmi_lanes_memo_count_translation(void) { atomic_fetch_add(&n_translated, 1); }

void rmi_lanes_memo_stats_get(remat_lanes_memo_stats *s)
{
    *s = (remat_lanes_memo_stats){.translated = atomic_load(&n_translated),
                                  .reused = atomic_load(&n_reused),
                                  .code_reused = atomic_load(&n_code_reused)};
}

bool rmi_lanes_translate_kept(lanes_key *k, bool (*translate)(void *ctx, lanes_memo_val *out), void *ctx,
                              lanes_memo_val *out, lanes_memo_entry **memo)
{
    lanes_memo_entry *e = rmi_lanes_memo_find(k, out);
    bool ok = true;
    if (!e) {
        rmi_lanes_memo_count_translation();
        memset(out, 0, sizeof *out);
        ok = translate(ctx, out);
        if (ok)
            e = rmi_lanes_memo_add(k, out);
    }
    *memo = ok ? e : NULL;
    rmi_lanes_key_free(k);
    return ok;
}
