/* copy_op.c — a structural op's copy plan by its parameter kind (copy_op.h). */
#include "backend/cpu/copy_op.h"

#include "core/exhaustive.h"

remat_cpu_copy_plan rmi_cpu_contig_plan(remat_dtype dt, size_t n)
{
    return (remat_cpu_copy_plan){.kind = n ? REMAT_CPU_COPY_CONTIG : REMAT_CPU_COPY_EMPTY,
                                 .esize = (uint8_t)remat_dtype_size(dt), .n = (int64_t)n};
}

REMAT_EXHAUSTIVE_BEGIN
bool rmi_cpu_copy_plan_of(remat_cpu_copy_plan *p, const remat_exec_op *op, size_t n)
{
    switch (remat_op_param_of(op->op)) {
    case REMAT_OPP_NONE: *p = rmi_cpu_contig_plan(op->dtype, n); return true; /* reshape */
    case REMAT_OPP_PERM: rmi_cpu_transpose_plan(p, op->dtype, &op->in_shapes[0], op->p.perm); return true;
    case REMAT_OPP_BDIMS:
        rmi_cpu_broadcast_in_dim_plan(p, op->dtype, &op->shape, &op->in_shapes[0], op->p.bdims);
        return true;
    case REMAT_OPP_SLICE: rmi_cpu_slice_plan(p, op->dtype, &op->in_shapes[0], op->p.slice); return true;
    case REMAT_OPP_PAD: rmi_cpu_pad_plan(p, op->dtype, &op->shape, &op->in_shapes[0], op->p.pad); return true;
    case REMAT_OPP_AXIS:
    case REMAT_OPP_FILL:
    case REMAT_OPP_ARG_POS:
    case REMAT_OPP_OUTPUT:
    case REMAT_OPP_INT_EXPONENT:
    case REMAT_OPP_EXPONENT:
    case REMAT_OPP_AXES:
    case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_CALL:
    case REMAT_OPP_CUSTOM:
    case REMAT_OPP_HOP:
    case REMAT_OPP_COUNT:
        return false;
    }
    return false;
}
REMAT_EXHAUSTIVE_END
