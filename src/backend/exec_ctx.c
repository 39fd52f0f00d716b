/* exec_ctx.c — short-lived execution contexts (backend_impl.h remat_exec_ctx). */
#include "backend/backend_impl.h"
#include "core/error.h"

remat_status rmi_exec_ctx_open(remat_backend *be, remat_exec_ctx *cx)
{
    *cx = (remat_exec_ctx){.be = be, .state = NULL};
    if (!be->iface.program_new)
        return REMAT_OK;
    if (!(cx->state = be->iface.program_new(be)))
        return rmi_error(REMAT_ERR_BACKEND, "%s backend: %s", be->iface.name, remat_last_error());
    return REMAT_OK;
}

remat_status rmi_exec_ctx_close(remat_exec_ctx *cx)
{
    remat_status st = cx->be->iface.finish && (cx->state || !cx->be->iface.program_new) ? cx->be->iface.finish(cx) : REMAT_OK;
    if (cx->state)
        cx->be->iface.program_free(cx->state);
    cx->state = NULL;
    return st;
}
