/*
 * jit.c — compiles lane programs (backend/lane.h) into native loops with
 * libgccjit, GCC's code generator as a library (Debian: libgccjit-12-dev),
 * and caches them; jit_gen.c writes each program as a libgccjit function.
 *
 * The generated function is, for a program with m lanes:
 *
 *   void lane(char **bufs, long long *strides, long long count, long long lanes)
 *   {
 *       char *p_b = bufs[b]; long long st_b = strides[b];    every buffer used
 *       T k_e = ((T *)p_b)[off];                               m == 1: state in locals
 *       for (long long s = 0; s < count; s++) {
 *           for (long long j = 0; j < lanes; j++) {           (no loop when m == 1)
 *               T r_i = ((T *)p_b)[off + j * lstride];        LOAD
 *               T r_i = r_a * r_b;                             OP, CONST
 *               ((T *)p_b)[off + j * lstride] = r_a;           STORE
 *           }
 *           p_b += st_b;
 *       }
 *       ((T *)p_b)[off] = k_e;                                 m == 1: state back
 *   }
 *
 * Blocked programs. A program of many lanes holding a transcendental (a
 * fused group's: exec/fuse_jit.c) runs its lanes in blocks of up to 256
 * instead: per block, a loop over the lanes for the instructions up to the
 * first transcendental, which writes its argument into a local array, then
 * one call of the interpreted kernels' own map on that array (vmath.h's
 * rmi_vm_map_any: SLEEF's vectors, erf_inv's function), then the next loop,
 * and so on; a register read in a later loop than its own goes through an
 * array of its own. The code reaches the map through its exported global
 * pointer RMI_JIT_VMAP (jit_gen.h), which compile_new sets once the code is
 * loaded: an address the code on disk cannot hold, and a symbol remat does
 * not export. Each element's bits are the map's, which depend on the
 * element's value only (vmath.c, "neighbours").
 *
 * Bits: every op is written as the CPU kernel writes it (elementwise.c:
 * max/min/relu/select as the same conditionals, integer_pow's products in
 * the same order, SLEEF's scalar twin of the kernels' vector functions for
 * exp/log/sin/cos/tanh/erf/pow (vmath.h), libm's sqrt), compiled with
 * -ffp-contract=off so that no multiply and
 * add are fused, and without -ffast-math, so nothing is reassociated: the
 * results equal the interpreter's bit for bit (tests/test_scan_jit.c).
 *
 * Compiling costs ~60 ms for a small body (much of it the assembler and
 * linker runs libgccjit makes) and grows with its size (the scan module
 * bounds that), so a scan's kernels are compiled together, and cached
 * for the life of the process by their full contents: the many programs a
 * test grid or a schedule comparison compiles from one body share one
 * compilation. Across processes, the shared objects gcc makes are kept on
 * disk (jit_disk.h), keyed by the programs themselves and the generator's
 * version, so a later process loads them without loading libgccjit, which
 * is opened only when gcc has to run (jit_lib.h). gcc's driver, which
 * runs as and ld, runs as a process of its own (libgccjit's external
 * driver): inside libgccjit, its signal handlers were the whole process's
 * (jit_tmp.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/jit.h"
#include "core/alloc.h"
#include "core/assert.h"
#include "core/error.h"

#if REMAT_HAVE_GCCJIT

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "backend/cpu/jit_cost.h"
#include "backend/cpu/jit_disk.h"
#include "backend/cpu/jit_gen.h"
#include "backend/cpu/jit_lib.h"
#include "backend/cpu/jit_tmp.h"
#include "backend/cpu/vmath.h"
#include "backend/jit_gen_version.h"

/* ---- the cache ---- */

/* Where a compilation's code lives: in libgccjit's result (compiled in
 * memory), or in a shared object loaded from the disk cache (jit_disk.h). */
typedef struct {
    gcc_jit_result *res;
    void *dl;
} lane_code;

typedef struct {
    size_t len;
    unsigned char *key;
    lane_code code; /* zero: held by another entry of the same compilation */
    remat_lane_fn fn;
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
/* libgccjit promises that threads may each build and compile their own
 * context, but ThreadSanitizer sees two compilations racing on strings
 * inside libgccjit 12 (gcc itself runs under libgccjit's own global lock;
 * building the context before it does not). Compilations take turns here:
 * they would mostly wait on libgccjit's lock anyway. */
static pthread_mutex_t gccjit_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *cache;
static int n_cache, cap_cache;

typedef struct {
    unsigned char *p;
    size_t len, cap;
} bytes;

static int put(bytes *b, const void *v, size_t n)
{
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1024;
        while (nc < b->len + n)
            nc *= 2;
        unsigned char *q = rmi_realloc(b->p, nc);
        if (!q)
            return 0;
        b->p = q, b->cap = nc;
    }
    memcpy(b->p + b->len, v, n);
    b->len += n;
    return 1;
}

/* Field by field: the structs have padding, which callers need not zero. */
static int program_key(const remat_lane_program *p, bytes *k)
{
    int ok = put(k, &p->m, sizeof p->m) && put(k, &p->n_bufs, sizeof p->n_bufs) && put(k, &p->n_ins, sizeof p->n_ins);
    for (int b = 0; ok && b < p->n_bufs; b++)
        ok = put(k, &p->bufs[b].dt, 1) && put(k, &p->bufs[b].state, 1);
    for (int i = 0; ok && i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        ok = put(k, &I->kind, 1) && put(k, &I->dt, 1) && put(k, &I->op, 2) && put(k, &I->post, 1) &&
             put(k, &I->a, 4) && put(k, &I->b, 4) &&
             put(k, &I->c, 4) && put(k, &I->buf, 4) && put(k, &I->off, 8) && put(k, &I->lstride, 8) &&
             put(k, &I->imm, 8);
    }
    return ok;
}

static void code_release(lane_code *code)
{
    if (code->res)
        gcc_jit_result_release(code->res);
    if (code->dl)
        dlclose(code->dl);
    *code = (lane_code){0};
}

static void *code_get(const lane_code *code, const char *name)
{
    return code->res ? gcc_jit_result_get_code(code->res, name) : code->dl ? dlsym(code->dl, name) : NULL;
}

static int has_lanes(const lane_code *code, int n)
{
    char name[32];
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "lane%d", k);
        if (!code_get(code, name))
            return 0;
    }
    return 1;
}

/* The disk cache's key, made without libgccjit (so that a hit never loads
 * it): what the code depends on besides the programs — remat's version, the
 * generator's (a hash of its sources, with the compiler and libgccjit
 * versions of the build: jit_gen_version.h), the options, the SLEEF variant
 * the code calls (vmath.h: with or without FMA) — then the
 * programs themselves, field by field, in order (lane k is ps[k]). */
static int disk_key(int n, const remat_lane_program *const *ps, const char *opts, bytes *key)
{
    char head[512];
    const int hn = snprintf(head, sizeof head, "remat %s | %s | %s | %s | %d programs\n", REMAT_VERSION_STRING,
                            REMAT_JIT_GEN_VERSION, opts, rmi_vm_scalar_name(RMI_VM_SIN, true), n);
    int ok = hn > 0 && (size_t)hn < sizeof head && put(key, head, (size_t)hn);
    for (int k = 0; ok && k < n; k++)
        ok = program_key(ps[k], key);
    return ok;
}

/* Compiles c into a shared object in the cache directory, loads it and
 * stores it under key; on any failure the caller compiles in memory. */
static void *compile_to_disk(gcc_jit_context *c, const char *dir, const bytes *key)
{
    char so[4200];
    rmi_jit_tmp_sweep(dir); /* what processes killed while compiling left */
    const int fd = rmi_jit_tmp_open(so, sizeof so, dir, "so");
    if (fd < 0)
        return NULL;
    close(fd);
    gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, so);
    void *dl = gcc_jit_context_get_first_error(c) ? NULL : dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (dl)
        rmi_jit_disk_store(dir, key->p, key->len, so);
    unlink(so);
    return dl;
}

/* The command-line options of a compilation of ps (part of the disk key). */
static void options(int n, const remat_lane_program *const *ps, char *opts, size_t cap)
{
    /* -O first: compile_gcc reads the level from opts[2] */
    snprintf(opts, cap, "-O%d -ffp-contract=off", rmi_cpu_jit_level(n, ps));
#if defined(__x86_64__)
    /* libgccjit has no -march=native: name the level this CPU has. Wider
     * vectors change no bits (IEEE ops, no contraction, scalar SLEEF calls). */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
        strcat(opts, " -march=x86-64-v3");
#endif
    int scalar = 1;
    for (int k = 0; k < n; k++)
        scalar &= ps[k]->m == 1;
    if (scalar) /* a serial chain of scalar ops: packing pairs into vectors only adds shuffles to it */
        strcat(opts, " -fno-tree-slp-vectorize");
    else /* the buffers may alias as far as gcc knows: let it check them all at run time and vectorise */
        strcat(opts, " --param=vect-max-version-for-alias-checks=200");
}

static int has_tool(const char *tool);

/* Once the external driver failed where the embedded one then compiled (no
 * `x86_64-linux-gnu-gcc-12` or the like on PATH: Debian's gcc-12, which
 * libgccjit0 does not depend on), the embedded one, for the rest of the
 * process (jit_tmp.h). */
static atomic_bool no_external_driver;

/* All n programs into a new libgccjit context c, functions
 * lane0..lane<n-1>; gcc's driver run as a process of its own (external)
 * or inside libgccjit. */
static remat_status build_context(int n, const remat_lane_program *const *ps, const char *opts, bool external,
                                  gcc_jit_context **out)
{
    gcc_jit_context *c = *out = gcc_jit_context_acquire();
    if (!c)
        return rmi_error(REMAT_ERR_BACKEND, "jit: libgccjit gave no context");
    gcc_jit_context_set_int_option(c, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, opts[2] - '0');
    gcc_jit_context_set_bool_print_errors_to_stderr(c, 0); /* reported once, by the caller */
    gcc_jit_context_set_bool_use_external_driver(c, external);
    char one[64];
    for (const char *o = opts + 4; *o;) { /* every option after the -O level */
        size_t len = strcspn(o, " ");
        snprintf(one, sizeof one, "%.*s", (int)len, o);
        gcc_jit_context_add_command_line_option(c, one);
        o += len + (o[len] == ' ');
    }
    remat_jit_math math = {0}; /* imported once per context */
    char name[32];
    for (int k = 0; k < n; k++) {
        snprintf(name, sizeof name, "lane%d", k);
        const int made = rmi_jit_generate(c, &math, ps[k], name);
        if (made < 0)
            return rmi_error(REMAT_ERR_NOMEM, "jit: out of memory generating %s", name); /* interpreted */
        if (!made)
            return REMAT_ERR_UNSUPPORTED; /* an op this compiler does not know: interpret */
    }
    return REMAT_OK;
}

/* All n programs into one libgccjit context (one assembler and linker run,
 * which is most of libgccjit's ~20 ms per compilation), functions
 * lane0..lane<n-1>; into the disk cache under key when dir is set. gcc's
 * driver runs as a process of its own (jit_tmp.h says why), unless it
 * cannot be started: then inside libgccjit. Called with gccjit_lock held. */
static remat_status compile_gcc(int n, const remat_lane_program *const *ps, const char *opts, const char *dir,
                                const bytes *key, lane_code *code)
{
    if (!rmi_gccjit_open())
        return REMAT_ERR_BACKEND; /* the message names the library */
    rmi_vm_export_symbols(); /* the SLEEF functions the code imports */
    if (!(has_tool("as") && has_tool("ld")))
        return rmi_error(REMAT_ERR_BACKEND, "jit: no assembler and linker (as, ld) on PATH");
    bool external = !atomic_load(&no_external_driver), retried = false;
    for (;;) {
        gcc_jit_context *c = NULL;
        remat_status st = build_context(n, ps, opts, external, &c);
        if (st != REMAT_OK) {
            if (c)
                gcc_jit_context_release(c);
            return st;
        }
        const char *dump = getenv("REMAT_JIT_DUMP"); /* a directory: the assembly of each compilation */
        if (dump && *dump) {
            static atomic_int seq; /* threads compiling at once get distinct files */
            char path[4096];
            snprintf(path, sizeof path, "%s/lane%d.s", dump, atomic_fetch_add(&seq, 1));
            gcc_jit_context_compile_to_file(c, GCC_JIT_OUTPUT_KIND_ASSEMBLER, path);
        }
        if (dir)
            code->dl = compile_to_disk(c, dir, key);
        if (!code->dl)
            code->res = gcc_jit_context_compile(c);
        if (!has_lanes(code, n)) {
            const char *e = gcc_jit_context_get_first_error(c);
            code_release(code);
            /* libgccjit's words when pex could not run the driver, or it
             * failed: once more with the embedded driver */
            if (external && e && strstr(e, "error invoking gcc driver")) {
                gcc_jit_context_release(c);
                external = false, retried = true;
                continue;
            }
            st = rmi_error(REMAT_ERR_BACKEND, "jit: libgccjit failed: %s", e ? e : "(no message)");
        } else if (retried) { /* the external driver is what failed: not tried again */
            atomic_store(&no_external_driver, true);
        }
        gcc_jit_context_release(c);
        return st;
    }
}

/* The code of n programs: from the disk cache when an earlier process
 * compiled the same, else (when `compile`) from gcc; REMAT_ERR_UNSUPPORTED
 * without `compile` and no entry. */
static remat_status compile_new(int n, const remat_lane_program *const *ps, lane_code *code, remat_lane_fn *fn,
                                const char *cache_dir, bool compile)
{
    char opts[256], dir[4096];
    options(n, ps, opts, sizeof opts);
    bytes key = {0};
    const bool disk = rmi_jit_disk_dir(cache_dir, dir, sizeof dir);
    if (disk && !disk_key(n, ps, opts, &key)) {
        rmi_free(key.p);
        return rmi_error(REMAT_ERR_NOMEM, "jit: out of memory");
    }
    if (disk) {
        code->dl = rmi_jit_disk_load(dir, key.p, key.len);
        if (code->dl && !has_lanes(code, n)) /* the key matched: cannot happen short of a broken file system */
            code_release(code);
    }
    remat_status st = REMAT_OK;
    if (!code->dl && !compile) {
        st = REMAT_ERR_UNSUPPORTED;
    } else if (!code->dl) {
        pthread_mutex_lock(&gccjit_lock);
        remat_jit_tmp_hold_state hold; /* no temporary file outlives a signal (jit_tmp.h) */
        rmi_jit_tmp_hold(&hold);
        st = compile_gcc(n, ps, opts, disk ? dir : NULL, &key, code);
        rmi_jit_tmp_release(&hold);
        pthread_mutex_unlock(&gccjit_lock);
    }
    rmi_free(key.p);
    char name[32];
    for (int k = 0; k < n && st == REMAT_OK; k++) {
        snprintf(name, sizeof name, "lane%d", k);
        fn[k] = (remat_lane_fn)code_get(code, name);
    }
    bool blocked = false; /* only blocked programs' code defines the map pointer (jit_gen.h) */
    for (int k = 0; k < n && st == REMAT_OK; k++)
        blocked |= rmi_jit_blocked(ps[k]);
    if (st == REMAT_OK && blocked) { /* a blocked program's maps (jit_gen.h), before any of its functions runs */
        void (**vmap)(int, int, long long, void *, const void *, double) =
            code->res ? gcc_jit_result_get_global(code->res, RMI_JIT_VMAP) : dlsym(code->dl, RMI_JIT_VMAP);
        REMAT_ASSERT(vmap); /* the generator wrote it for each blocked program, the key holds the programs */
        *vmap = rmi_vm_map_any;
    }
    return st;
}

/* Set when libgccjit cannot produce code at all (no assembler or linker, no
 * writable TMPDIR): later calls do not try again, and the reason is printed
 * once, because interpreting instead is correct but slower. */
static int broken;

/* libgccjit's embedded driver runs `as` and `ld` found on PATH, and calls
 * exit() when it cannot: so look first (binutils, a dependency of
 * libgccjit0, puts them in /usr/bin). */
static int has_tool(const char *tool)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *colon = strchr(path, ':');
        const size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && len + strlen(tool) + 2 < sizeof buf) {
            memcpy(buf, path, len);
            snprintf(buf + len, sizeof buf - len, "/%s", tool);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path = colon ? colon + 1 : NULL;
    }
    return 0;
}

static int find(const bytes *k, remat_lane_fn *fn)
{
    for (int i = 0; i < n_cache; i++)
        if (cache[i].len == k->len && !memcmp(cache[i].key, k->p, k->len)) {
            *fn = cache[i].fn;
            return 1;
        }
    return 0;
}

bool rmi_cpu_jit_driver_external(void)
{
    return !atomic_load(&no_external_driver);
}

bool rmi_cpu_can_compile_lanes(void)
{
    pthread_mutex_lock(&cache_lock);
    const int b = broken;
    pthread_mutex_unlock(&cache_lock);
    return !b;
}

/* Programs are cached one by one, so a later call asking for a subset (the
 * backward node of a scan after its forward node compiled every kernel of
 * the body) finds them all; those not found are compiled together. The cache
 * lock is not held while compiling (seconds for a large body): another
 * thread's lookups go on, and two threads compiling the same programs at once
 * both compile (one after the other, gccjit_lock), the second keeping the
 * first's code. Without `compile`, only what this process or the disk cache
 * holds: REMAT_ERR_UNSUPPORTED (no message) when some program is in neither. */
static remat_status lanes_get(int n, const remat_lane_program *const *ps, remat_lane_fn *out, const char *cache_dir,
                              bool compile)
{
    REMAT_ASSERT(n >= 1 && ps && out);
    if (!rmi_cpu_can_compile_lanes())
        return REMAT_ERR_UNSUPPORTED;
    bytes *keys = rmi_calloc((size_t)n, sizeof *keys);
    const remat_lane_program **miss = rmi_malloc(sizeof *miss * (size_t)n);
    remat_lane_fn *fns = rmi_malloc(sizeof *fns * (size_t)n);
    int *idx = rmi_malloc(sizeof *idx * (size_t)n), ok = keys && miss && fns && idx;
    for (int i = 0; ok && i < n; i++) {
        REMAT_ASSERT(ps[i] && ps[i]->m >= 1);
        ok = program_key(ps[i], &keys[i]);
    }
    remat_status st = ok ? REMAT_OK : rmi_error(REMAT_ERR_NOMEM, "jit: out of memory");
    int n_miss = 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; st == REMAT_OK && i < n; i++)
        if (!find(&keys[i], &out[i]))
            idx[n_miss] = i, miss[n_miss++] = ps[i];
    pthread_mutex_unlock(&cache_lock);

    lane_code code = {0};
    if (st == REMAT_OK && n_miss > 0)
        st = compile_new(n_miss, miss, &code, fns, cache_dir, compile);

    pthread_mutex_lock(&cache_lock);
    if (st == REMAT_ERR_BACKEND && !broken) {
        broken = 1;
        fprintf(stderr, "remat: scan loops will be interpreted, compiling them failed: %s "
                        "(REMAT_NO_JIT=1 skips compiling)\n", remat_last_error());
    }
    if (st == REMAT_OK && n_miss > 0 && n_cache + n_miss > cap_cache) {
        int nc = cap_cache ? 2 * cap_cache : 16;
        while (nc < n_cache + n_miss)
            nc *= 2;
        cache_entry *q = rmi_realloc(cache, sizeof *q * (size_t)nc);
        if (q)
            cache = q, cap_cache = nc;
        else
            st = rmi_error(REMAT_ERR_NOMEM, "jit: out of memory");
    }
    int kept = 0; /* the result is kept (by its first new entry) for the life of the process */
    for (int j = 0; st == REMAT_OK && j < n_miss; j++) {
        const int i = idx[j];
        if (find(&keys[i], &out[i])) /* another thread compiled it meanwhile: use that */
            continue;
        cache[n_cache++] = (cache_entry){.len = keys[i].len, .key = keys[i].p, .code = kept ? (lane_code){0} : code,
                                         .fn = fns[j]};
        kept = 1;
        keys[i].p = NULL; /* the cache owns it */
        out[i] = fns[j];
    }
    pthread_mutex_unlock(&cache_lock);
    if (!kept)
        code_release(&code);
    for (int i = 0; keys && i < n; i++)
        rmi_free(keys[i].p);
    rmi_free(keys), rmi_free(miss), rmi_free(fns), rmi_free(idx);
    return st;
}

remat_status rmi_cpu_compile_lanes(const remat_backend *be, int n, const remat_lane_program *const *ps,
                                   remat_lane_fn *out, const char *cache_dir)
{
    (void)be; /* the host's code: one for every CPU backend */
    return lanes_get(n, ps, out, cache_dir, true);
}

remat_status rmi_cpu_load_lanes(int n, const remat_lane_program *const *ps, remat_lane_fn *out,
                                const char *cache_dir)
{
    return lanes_get(n, ps, out, cache_dir, false);
}

#endif
