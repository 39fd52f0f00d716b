/*
 * config.c — the environment's compile options (config.h). Every
 * compile-time variable is read here and nowhere else, so that
 * remat_compile_opts can take all of them from its caller instead.
 */
#include "core/config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_THREADS 256 /* as core/pool.c */

bool rmi_env_flag(const char *name)
{
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

int rmi_env_num_threads(int max)
{
    const char *e = getenv("REMAT_NUM_THREADS");
    if (!e || !*e)
        return 0;
    char *end;
    long v = strtol(e, &end, 10);
    if (*end == '\0' && v >= 1 && v <= max)
        return (int)v;
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "remat: REMAT_NUM_THREADS=%s is not a thread count in 1..%d; using the CPU count\n", e, max);
    return 0;
}

const char *rmi_default_tier_dir(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

bool rmi_default_cache_dir(char *dir, size_t cap)
{
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (x && *x == '/') /* the XDG spec ignores a relative XDG_CACHE_HOME */
        n = snprintf(dir, cap, "%s/remat", x);
    else if (h && *h)
        n = snprintf(dir, cap, "%s/.cache/remat", h);
    else
        return false;
    return n > 0 && (size_t)n < cap;
}

static remat_jit_mode env_jit(void)
{
    if (rmi_env_flag("REMAT_NO_JIT"))
        return REMAT_JIT_NEVER;
    const char *e = getenv("REMAT_JIT");
    if (!e || !*e || !strcmp(e, "auto"))
        return REMAT_JIT_AUTO;
    if (!strcmp(e, "always"))
        return REMAT_JIT_ALWAYS;
    if (!strcmp(e, "never"))
        return REMAT_JIT_NEVER;
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "remat: REMAT_JIT=%s: not always, never or auto; using auto\n", e);
    return REMAT_JIT_AUTO;
}

/* A whole decimal number, else `bad`. */
static int64_t env_int(const char *name, int64_t unset, int64_t bad, int64_t min)
{
    const char *e = getenv(name);
    if (!e || !*e)
        return unset;
    char *end;
    long long v = strtoll(e, &end, 10);
    return *end == 0 && v >= min ? (int64_t)v : bad;
}

remat_compile_options remat_compile_options_default(void)
{
    return (remat_compile_options){0};
}

remat_status remat_compile_options_from_env(remat_compile_options *o)
{
    if (!o)
        return rmi_error(REMAT_ERR_NULL, "remat_compile_options_from_env: opts is NULL");
    *o = remat_compile_options_default();
    o->jit = env_jit();
    const char *d = getenv("REMAT_CACHE_DIR");
    o->cache_dir = d && *d ? d : NULL;
    o->no_cache = rmi_env_flag("REMAT_NO_CACHE");
    /* the pool reads REMAT_NUM_THREADS once, at its start: a compile does
     * not undo the caller's remat_set_num_threads */
    o->num_threads = 0;
    /* set but not a count of at least 2 lanes: not blocked */
    o->scan_block_lanes = env_int("REMAT_SCAN_BLOCK", 0, REMAT_SCAN_BLOCK_NONE, 2);
    /* set to 0: keep no plan; unset or bad: the default */
    const int64_t k = env_int("REMAT_SCAN_PLAN_MAX_OPS", -2, -2, 0);
    o->scan_plan_max_ops = k == -2 ? 0 : k == 0 ? REMAT_SCAN_PLAN_NONE : k;
    o->no_fusion = rmi_env_flag("REMAT_NO_FUSION");
    o->no_inplace = rmi_env_flag("REMAT_NO_INPLACE");
    const char *b = getenv("REMAT_BACKEND");
    o->backend = b && *b ? b : NULL;
    const char *t = getenv("REMAT_TIER_DIR");
    o->tier_dir = t && *t ? t : NULL;
    return REMAT_OK;
}

remat_status rmi_compile_options_check(const remat_compile_options *o)
{
    if ((unsigned)o->jit >= REMAT_JIT_MODE_COUNT)
        return rmi_error(REMAT_ERR_VALUE, "compile options: jit = %d is not REMAT_JIT_AUTO, _ALWAYS or _NEVER",
                         (int)o->jit);
    if (o->num_threads < 0 || o->num_threads > MAX_THREADS)
        return rmi_error(REMAT_ERR_VALUE, "compile options: num_threads = %d is not in 0..%d", o->num_threads,
                         MAX_THREADS);
    if (o->scan_block_lanes < 0 && o->scan_block_lanes != REMAT_SCAN_BLOCK_NONE)
        return rmi_error(REMAT_ERR_VALUE,
                         "compile options: scan_block_lanes = %lld is negative (REMAT_SCAN_BLOCK_NONE is %lld)",
                         (long long)o->scan_block_lanes, (long long)REMAT_SCAN_BLOCK_NONE);
    if (o->scan_plan_max_ops < 0 && o->scan_plan_max_ops != REMAT_SCAN_PLAN_NONE)
        return rmi_error(REMAT_ERR_VALUE,
                         "compile options: scan_plan_max_ops = %lld is negative (REMAT_SCAN_PLAN_NONE is %lld)",
                         (long long)o->scan_plan_max_ops, (long long)REMAT_SCAN_PLAN_NONE);
    if (o->cache_dir && !*o->cache_dir)
        return rmi_error(REMAT_ERR_VALUE, "compile options: cache_dir is \"\" (NULL: the default; no_cache: none)");
    if (o->tier_dir && !*o->tier_dir)
        return rmi_error(REMAT_ERR_VALUE, "compile options: tier_dir is \"\" (NULL: $TMPDIR, else /tmp)");
    if (o->tier_max_bytes < 0)
        return rmi_error(REMAT_ERR_VALUE, "compile options: tier_max_bytes = %lld is negative",
                         (long long)o->tier_max_bytes);
    return REMAT_OK;
}
