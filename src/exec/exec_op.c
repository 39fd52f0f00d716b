/*
 * exec_op.c — what of a node's parameters reaches a backend, by parameter
 * kind (REMAT_OP_LIST): an op with a new kind of parameter fails to build
 * here until it is passed on (or said to stay in the graph).
 */
#include "core/assert.h"
#include "core/exhaustive.h"
#include "exec/exec_op.h"

REMAT_EXHAUSTIVE_BEGIN
void rmi_exec_op_params(const remat_node *n, remat_exec_op *op)
{
    switch (remat_op_param_of((remat_op)n->op)) {
    case REMAT_OPP_EXPONENT: op->p.exponent = n->p.exponent; break;
    case REMAT_OPP_INT_EXPONENT: op->p.int_exponent = n->p.int_exponent; break;
    case REMAT_OPP_AXIS: op->p.axis = n->p.axis; break;
    case REMAT_OPP_AXES: op->p.axes_mask = n->p.axes_mask; break;
    case REMAT_OPP_PERM: op->p.perm = n->p.perm; break;
    case REMAT_OPP_BDIMS: op->p.bdims = n->p.bdims; break;
    case REMAT_OPP_DOT: op->p.dot = n->p.dot; break;
    case REMAT_OPP_SOLVE: op->p.solve_transpose = n->p.solve_transpose; break;
    case REMAT_OPP_SLICE: op->p.slice = n->p.slice; break;
    case REMAT_OPP_PAD: op->p.pad = n->p.pad; break;
    case REMAT_OPP_CUSTOM: op->p.custom = n->p.custom; break;
    /* none, or read by the compiler itself (constants, arguments, outputs of
     * calls and scans, regions, scans): never lowered by a backend */
    case REMAT_OPP_NONE:
    case REMAT_OPP_FILL:
    case REMAT_OPP_ARG_POS:
    case REMAT_OPP_OUTPUT:
    case REMAT_OPP_CALL:
    case REMAT_OPP_HOP:
        break;
    case REMAT_OPP_COUNT:
        REMAT_UNREACHABLE("exec_op: an op outside the table");
    }
}

void rmi_fused_uop_params(const remat_node *n, remat_fused_uop *u)
{
    switch (remat_op_param_of((remat_op)n->op)) {
    case REMAT_OPP_EXPONENT: u->exponent = n->p.exponent; break;
    case REMAT_OPP_INT_EXPONENT: u->int_exponent = (int32_t)n->p.int_exponent; break;
    case REMAT_OPP_NONE: break;
    case REMAT_OPP_FILL:
    case REMAT_OPP_ARG_POS:
    case REMAT_OPP_OUTPUT:
    case REMAT_OPP_AXIS:
    case REMAT_OPP_AXES:
    case REMAT_OPP_PERM:
    case REMAT_OPP_BDIMS:
    case REMAT_OPP_DOT:
    case REMAT_OPP_SOLVE:
    case REMAT_OPP_SLICE:
    case REMAT_OPP_PAD:
    case REMAT_OPP_CUSTOM:
    case REMAT_OPP_CALL:
    case REMAT_OPP_HOP:
    case REMAT_OPP_COUNT:
        REMAT_UNREACHABLE("fused micro-op: not an elementwise op");
    }
}
REMAT_EXHAUSTIVE_END
