/*
 * select.c — a backend by name ("cpu", "cuda", "cuda:N"), and the public
 * door to a backend's memory (remat_backend_alloc/free/upload/download) for
 * callers that keep buffers on the device between runs (remat_run_device).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/error.h"

remat_backend *remat_backend_from_name(const char *name)
{
    if (!name || !*name || strcmp(name, "cpu") == 0)
        return remat_backend_cpu();
    if (strcmp(name, "cuda") == 0)
        return remat_backend_cuda(0);
    if (strncmp(name, "cuda:", 5) == 0) {
        char *end;
        errno = 0;
        long dev = strtol(name + 5, &end, 10);
        if (name[5] && !*end && errno == 0 && dev >= 0 && dev <= 1024)
            return remat_backend_cuda((int)dev);
    }
    rmi_error(REMAT_ERR_ARG, "backend '%s': expected cpu, cuda or cuda:N", name);
    return NULL;
}

remat_status remat_backend_from_env(remat_backend **out)
{
    if (!out)
        return rmi_error(REMAT_ERR_NULL, "remat_backend_from_env: out is NULL");
    remat_compile_options o;
    remat_compile_options_from_env(&o); /* REMAT_BACKEND, read in core/config.c */
    const char *name = o.backend;
    if ((*out = remat_backend_from_name(name)))
        return REMAT_OK;
    char why[256]; /* the message is rewritten below: copy it first */
    snprintf(why, sizeof why, "%s", remat_last_error());
    return rmi_error(strncmp(name, "cuda", 4) == 0 ? REMAT_ERR_BACKEND : REMAT_ERR_ARG, "REMAT_BACKEND=%s: %s", name,
                     why);
}

void *remat_backend_alloc(remat_backend *be, size_t bytes)
{
    if (!be) {
        rmi_error(REMAT_ERR_NULL, "remat_backend_alloc: backend is NULL");
        return NULL;
    }
    void *p = be->iface.mem_alloc(&(remat_exec_ctx){.be = be, .state = NULL}, bytes ? bytes : 1);
    if (!p)
        rmi_error(REMAT_ERR_NOMEM, "remat_backend_alloc: %s backend: out of memory for %zu bytes", be->iface.name,
                  bytes);
    return p;
}

void remat_backend_free(remat_backend *be, void *p)
{
    if (!be || !p)
        return;
    be->iface.mem_free(&(remat_exec_ctx){.be = be, .state = NULL}, p);
}

/* the two copies: host memory is backend memory without copy_in */
static remat_status copy(remat_backend *be, void *dst, const void *src, size_t bytes, int up, const char *what)
{
    if (!be || ((!dst || !src) && bytes))
        return rmi_error(REMAT_ERR_NULL, "%s: %s is NULL", what, !be ? "backend" : !dst ? "dst" : "src");
    if (!bytes)
        return REMAT_OK;
    if (!be->iface.copy_in) {
        memcpy(dst, src, bytes);
        return REMAT_OK;
    }
    remat_exec_ctx cx; /* a short-lived stream for the one copy */
    remat_status st = rmi_exec_ctx_open(be, &cx);
    if (st != REMAT_OK)
        return st;
    if (up)
        be->iface.copy_in(&cx, dst, src, bytes);
    else
        be->iface.copy_out(&cx, dst, src, bytes);
    return rmi_exec_ctx_close(&cx);
}

remat_status remat_backend_upload(remat_backend *be, void *dst, const void *host_src, size_t bytes)
{
    return copy(be, dst, host_src, bytes, 1, "remat_backend_upload");
}

remat_status remat_backend_download(remat_backend *be, void *host_dst, const void *src, size_t bytes)
{
    return copy(be, host_dst, src, bytes, 0, "remat_backend_download");
}
