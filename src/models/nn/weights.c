/*
 * weights.c — a network's parameters as a safetensors file
 * (remat_nn_params_save / remat_nn_params_load, remat/nn.h).
 *
 * The format (huggingface safetensors): an unsigned 64-bit little-endian N,
 * N bytes of a JSON object (padded with spaces to a multiple of 8), then the
 * tensors' bytes. Each tensor's entry is
 *   "Dense_0/kernel": {"dtype": "F32", "shape": [64, 16], "data_offsets": [0, 4096]}
 * with offsets into the data that follows the header; "__metadata__" maps
 * strings to strings. We write the parameters in their order, contiguous,
 * named by their Flax paths; we read any file whose tensors are exactly the
 * parameters (names, dtype, shapes), in any order. The header parser is a
 * strict reader of that one shape of JSON: every error names the file and
 * the header byte, or the tensor, that is wrong; nothing is written into the
 * parameters before the whole file is checked.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn_impl.h"

#define HEADER_MAX ((uint64_t)100 << 20) /* safetensors' own limit */

/* The tensors' bytes are little-endian (safetensors): written and read as
 * they are on a little-endian host, each element's bytes reversed on a
 * big-endian one. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_BIG_ENDIAN 0
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#error "weights.c: the host's byte order is neither little- nor big-endian (__BYTE_ORDER__)"
#endif

/* Reverses the bytes of each of the n / size elements of b in place. */
static void swap_elements(unsigned char *b, size_t n, size_t size)
{
    for (size_t at = 0; at + size <= n; at += size)
        for (size_t i = 0, j = size - 1; i < j; i++, j--) {
            unsigned char t = b[at + i];
            b[at + i] = b[at + j];
            b[at + j] = t;
        }
}

/* Writes n bytes of elements of size bytes in little-endian order. */
static int write_le(const void *data, size_t n, size_t size, FILE *f)
{
    if (!HOST_BIG_ENDIAN)
        return fwrite(data, 1, n, f) == n;
    unsigned char buf[4096]; /* a multiple of 8 */
    for (size_t at = 0; at < n;) {
        size_t k = n - at < sizeof buf ? n - at : sizeof buf;
        memcpy(buf, (const unsigned char *)data + at, k);
        swap_elements(buf, k, size);
        if (fwrite(buf, 1, k, f) != k)
            return 0;
        at += k;
    }
    return 1;
}

static const char *dtype_tag(remat_dtype dt) { return dt == REMAT_F64 ? "F64" : "F32"; }

/* a growing text (the header), through the injectable allocator */
typedef struct {
    char *s;
    size_t n, cap;
    int ok;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    for (int pass = 0; t->ok && pass < 2; pass++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            t->ok = 0;
        } else if (t->s && (size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        } else { /* grow, then write again */
            size_t cap = (t->cap + (size_t)k + 1) * 2;
            char *s = rmi_realloc(t->s, cap);
            if (!s)
                t->ok = 0;
            else
                t->s = s, t->cap = cap;
        }
    }
}

static void add_json_string(text *t, const char *s)
{
    add(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            add(t, "\\%c", c);
        else if (c < 0x20)
            add(t, "\\u%04x", c);
        else
            add(t, "%c", c);
    }
    add(t, "\"");
}

remat_status remat_nn_params_save(const remat_nn_params *p, FILE *f)
{
    if (!p || !f)
        return rmi_error(REMAT_ERR_NULL, "nn params save: params or file is NULL");
    text h = {.ok = 1};
    add(&h, "{\"__metadata__\":{\"format\":\"flax\",\"producer\":\"remat\"}");
    size_t off = 0;
    for (int i = 0; i < p->n; i++) {
        const nn_param *q = &p->p[i];
        size_t bytes = (size_t)remat_shape_numel(&q->shape) * remat_dtype_size(p->dtype);
        add(&h, ",");
        add_json_string(&h, q->name);
        add(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtype_tag(p->dtype));
        for (int d = 0; d < q->shape.rank; d++)
            add(&h, "%s%lld", d ? "," : "", (long long)q->shape.dims[d]);
        add(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
        off += bytes;
    }
    add(&h, "}");
    while (h.ok && h.n % 8 != 0) /* the data starts 8-aligned */
        add(&h, " ");
    if (!h.ok) {
        rmi_free(h.s);
        return rmi_error(REMAT_ERR_NOMEM, "nn params save: out of memory for the header");
    }
    unsigned char len8[8];
    for (int k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(h.s, 1, h.n, f) == h.n;
    rmi_free(h.s);
    for (int i = 0; ok && i < p->n; i++) {
        size_t bytes = (size_t)remat_shape_numel(&p->p[i].shape) * remat_dtype_size(p->dtype);
        ok = write_le(p->p[i].data, bytes, remat_dtype_size(p->dtype), f);
    }
    if (!ok)
        return rmi_error(REMAT_ERR_IO, "nn params save: cannot write: %s", strerror(errno ? errno : EIO));
    return REMAT_OK;
}

/* ---- the header reader ---- */

typedef struct {
    const char *s, *path;
    size_t n, i;
} reader;

static remat_status bad(const reader *r, const char *what)
{
    return rmi_error(REMAT_ERR_VALUE, "nn params load: %s: safetensors header, byte %zu: %s", r->path, r->i + 8,
                     what);
}

static void ws(reader *r)
{
    while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r'))
        r->i++;
}

/* the next non-blank byte is c (consumed) */
static int eat(reader *r, char c)
{
    ws(r);
    if (r->i < r->n && r->s[r->i] == c) {
        r->i++;
        return 1;
    }
    return 0;
}

/* a JSON string into out (cap bytes with its NUL); ASCII escapes only */
static remat_status string(reader *r, char *out, size_t cap)
{
    if (!eat(r, '"'))
        return bad(r, "expected a string");
    size_t k = 0;
    while (r->i < r->n && r->s[r->i] != '"') {
        char c = r->s[r->i++];
        if ((unsigned char)c < 0x20)
            return bad(r, "a control character in a string");
        if (c == '\\') {
            if (r->i >= r->n)
                break;
            char e = r->s[r->i++];
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *at = strchr(from, e);
            if (e == 'u') {
                unsigned v = 0;
                for (int d = 0; d < 4; d++, r->i++) {
                    char h = r->i < r->n ? r->s[r->i] : 0;
                    int x = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                                         : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (x < 0)
                        return bad(r, "a bad \\u escape");
                    v = v * 16 + (unsigned)x;
                }
                if (v == 0 || v > 0x7f)
                    return bad(r, "a \\u escape outside ASCII (no parameter name has one)");
                c = (char)v;
            } else if (e && at)
                c = to[at - from];
            else
                return bad(r, "a bad escape in a string");
        }
        if (k + 1 >= cap)
            return bad(r, "a string too long for a parameter name");
        out[k++] = c;
    }
    if (r->i >= r->n)
        return bad(r, "the header ends inside a string");
    r->i++;
    out[k] = 0;
    return REMAT_OK;
}

static remat_status number(reader *r, uint64_t *v)
{
    ws(r);
    size_t start = r->i;
    uint64_t x = 0;
    while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
        unsigned d = (unsigned)(r->s[r->i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return bad(r, "a number too large");
        x = x * 10 + d, r->i++;
    }
    if (r->i == start)
        return bad(r, "expected a non-negative integer");
    *v = x;
    return REMAT_OK;
}

/* [n, n, ...] into v (at most max entries), their count into *k */
static remat_status numbers(reader *r, uint64_t *v, int max, int *k)
{
    if (!eat(r, '['))
        return bad(r, "expected '['");
    *k = 0;
    if (eat(r, ']'))
        return REMAT_OK;
    do {
        if (*k >= max)
            return bad(r, "too many numbers in a list");
        remat_status st = number(r, &v[(*k)++]);
        if (st != REMAT_OK)
            return st;
    } while (eat(r, ','));
    return eat(r, ']') ? REMAT_OK : bad(r, "expected ',' or ']'");
}

/* "__metadata__": an object of strings, skipped */
static remat_status metadata(reader *r)
{
    char buf[4096];
    if (!eat(r, '{'))
        return bad(r, "__metadata__ is not an object");
    if (eat(r, '}'))
        return REMAT_OK;
    do {
        remat_status st = string(r, buf, sizeof buf);
        if (st == REMAT_OK && !eat(r, ':'))
            st = bad(r, "expected ':'");
        if (st == REMAT_OK)
            st = string(r, buf, sizeof buf);
        if (st != REMAT_OK)
            return st;
    } while (eat(r, ','));
    return eat(r, '}') ? REMAT_OK : bad(r, "expected ',' or '}' in __metadata__");
}

typedef struct {
    uint64_t begin, end;
    int seen;
} placed;

/* one tensor's entry, checked against parameter q: where its data is */
static remat_status entry(reader *r, const remat_nn_params *p, int q, placed *at)
{
    const nn_param *par = &p->p[q];
    char key[32], dt[16] = "";
    uint64_t dims[REMAT_MAX_RANK + 1], offs[3];
    int rank = -1, n_offs = -1;
    if (!eat(r, '{'))
        return bad(r, "a tensor's entry is not an object");
    do {
        remat_status st = string(r, key, sizeof key);
        if (st == REMAT_OK && !eat(r, ':'))
            st = bad(r, "expected ':'");
        if (st != REMAT_OK)
            return st;
        if (!strcmp(key, "dtype") && !dt[0])
            st = string(r, dt, sizeof dt);
        else if (!strcmp(key, "shape") && rank < 0)
            st = numbers(r, dims, REMAT_MAX_RANK + 1, &rank);
        else if (!strcmp(key, "data_offsets") && n_offs < 0)
            st = numbers(r, offs, 3, &n_offs);
        else
            return bad(r, "a key other than dtype, shape, data_offsets (or one twice) in a tensor's entry");
        if (st != REMAT_OK)
            return st;
    } while (eat(r, ','));
    if (!eat(r, '}'))
        return bad(r, "expected ',' or '}' in a tensor's entry");
    if (!dt[0] || rank < 0 || n_offs < 0)
        return rmi_error(REMAT_ERR_VALUE, "nn params load: %s: tensor '%s' lacks its dtype, shape or data_offsets",
                         r->path, par->name);
    if (strcmp(dt, dtype_tag(p->dtype)))
        return rmi_error(REMAT_ERR_VALUE, "nn params load: %s: tensor '%s' is %s; the parameters are %s", r->path,
                         par->name, dt, dtype_tag(p->dtype));
    int same = rank == par->shape.rank;
    for (int d = 0; same && d < rank; d++)
        same = dims[d] == (uint64_t)par->shape.dims[d];
    if (!same) {
        char got[128] = "", want[128] = "";
        for (int d = 0; d < rank && d <= REMAT_MAX_RANK; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? ", " : "", (unsigned long long)dims[d]);
        for (int d = 0; d < par->shape.rank; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "",
                     (long long)par->shape.dims[d]);
        return rmi_error(REMAT_ERR_VALUE, "nn params load: %s: tensor '%s' has shape [%s]; the network's is [%s]",
                         r->path, par->name, got, want);
    }
    uint64_t bytes = (uint64_t)remat_shape_numel(&par->shape) * remat_dtype_size(p->dtype);
    if (n_offs != 2 || offs[1] < offs[0] || offs[1] - offs[0] != bytes)
        return rmi_error(REMAT_ERR_VALUE,
                         "nn params load: %s: tensor '%s': data_offsets are not [begin, begin + %llu] (its bytes)",
                         r->path, par->name, (unsigned long long)bytes);
    *at = (placed){offs[0], offs[1], 1};
    return REMAT_OK;
}

/* the header s[0..n) against p: every parameter's place in the data */
static remat_status header(reader *r, const remat_nn_params *p, placed *at)
{
    char name[1024];
    if (!eat(r, '{'))
        return bad(r, "the header is not a JSON object");
    if (!eat(r, '}'))
        do {
            remat_status st = string(r, name, sizeof name);
            if (st == REMAT_OK && !eat(r, ':'))
                st = bad(r, "expected ':'");
            if (st != REMAT_OK)
                return st;
            if (!strcmp(name, "__metadata__")) {
                if ((st = metadata(r)) != REMAT_OK)
                    return st;
                continue;
            }
            int q = remat_nn_params_find(p, name);
            if (q < 0)
                return rmi_error(REMAT_ERR_VALUE,
                                 "nn params load: %s: tensor '%s' is not a parameter of this network (its first is "
                                 "'%s')", r->path, name, p->n ? p->p[0].name : "none");
            if (at[q].seen)
                return rmi_error(REMAT_ERR_VALUE, "nn params load: %s: tensor '%s' is in the header twice", r->path,
                                 name);
            if ((st = entry(r, p, q, &at[q])) != REMAT_OK)
                return st;
        } while (eat(r, ','));
    if (!eat(r, '}'))
        return bad(r, "expected ',' or '}'");
    ws(r);
    if (r->i != r->n)
        return bad(r, "text after the header's object");
    return REMAT_OK;
}

/* the whole file (a regular one, at most `max` bytes) */
static remat_status slurp(const char *path, unsigned char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return rmi_error(REMAT_ERR_IO, "nn params load: cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    remat_status st = REMAT_OK;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        st = rmi_error(REMAT_ERR_IO, "nn params load: %s is not a regular file", path);
    size_t n = st == REMAT_OK ? (size_t)sb.st_size : 0;
    unsigned char *b = st == REMAT_OK ? rmi_malloc(n + 1) : NULL;
    if (st == REMAT_OK && !b)
        st = rmi_error(REMAT_ERR_NOMEM, "nn params load: out of memory for %s (%zu bytes)", path, n);
    if (st == REMAT_OK && fread(b, 1, n, f) != n)
        st = rmi_error(REMAT_ERR_IO, "nn params load: cannot read %s: %s", path,
                       ferror(f) ? strerror(errno) : "it shrank while being read");
    fclose(f);
    if (st != REMAT_OK) {
        rmi_free(b);
        return st;
    }
    *buf = b, *len = n;
    return REMAT_OK;
}

remat_status remat_nn_params_load(remat_nn_params *p, const char *path)
{
    if (!p || !path)
        return rmi_error(REMAT_ERR_NULL, "nn params load: params or path is NULL");
    unsigned char *b = NULL;
    size_t n = 0;
    remat_status st = slurp(path, &b, &n);
    if (st != REMAT_OK)
        return st;
    placed *at = rmi_calloc((size_t)p->n + 1, sizeof *at);
    uint64_t hl = 0;
    for (int k = 0; n >= 8 && k < 8; k++)
        hl |= (uint64_t)b[k] << (8 * k);
    if (!at)
        st = rmi_error(REMAT_ERR_NOMEM, "nn params load: out of memory");
    else if (n < 8)
        st = rmi_error(REMAT_ERR_VALUE, "nn params load: %s: %zu bytes, too short for a safetensors file (an 8-byte "
                       "header length first)", path, n);
    else if (hl > HEADER_MAX || hl > n - 8)
        st = rmi_error(REMAT_ERR_VALUE, "nn params load: %s: the header length %llu exceeds the file's %zu bytes "
                       "after it%s", path, (unsigned long long)hl, n - 8,
                       hl > HEADER_MAX ? " (or safetensors' 100 MB limit): not a safetensors file?" : "");
    if (st == REMAT_OK) {
        reader r = {.s = (const char *)b + 8, .path = path, .n = (size_t)hl};
        st = header(&r, p, at);
    }
    const size_t data_len = n - 8 - (size_t)hl;
    for (int i = 0; st == REMAT_OK && i < p->n; i++) {
        if (!at[i].seen)
            st = rmi_error(REMAT_ERR_VALUE, "nn params load: %s: parameter '%s' is missing", path, p->p[i].name);
        else if (at[i].end > data_len)
            st = rmi_error(REMAT_ERR_VALUE, "nn params load: %s: tensor '%s' ends at data byte %llu; the file has %zu "
                           "bytes of data (truncated?)", path, p->p[i].name, (unsigned long long)at[i].end, data_len);
    }
    for (int i = 0; st == REMAT_OK && i < p->n; i++) { /* all checked: now the values */
        memcpy(p->p[i].data, b + 8 + hl + at[i].begin, (size_t)(at[i].end - at[i].begin));
        if (HOST_BIG_ENDIAN)
            swap_elements(p->p[i].data, (size_t)(at[i].end - at[i].begin), remat_dtype_size(p->dtype));
    }
    rmi_free(at);
    rmi_free(b);
    return st;
}
