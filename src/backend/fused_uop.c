/*
 * fused_uop.c — what a fused group's micro-op runs, decided from its op's
 * row of the op table (category, then parameter kind for unary ops). Every
 * backend that lowers fused groups (cpu/fused.c, kernels/cuda/fused.c)
 * classifies through this one function, so a new row reaches them all.
 */
#include "backend/backend_impl.h"
#include "core/exhaustive.h"

REMAT_EXHAUSTIVE_BEGIN
int rmi_fused_uop_kind_of(remat_op op)
{
    if (op == REMAT_OP_BROADCAST) /* of a row or column vector, read in place (remat_fused_op.row_in) */
        return REMAT_UOP_BCAST;
    switch (remat_op_category_of(op)) {
    case REMAT_OPCAT_UNARY:
        switch (remat_op_param_of(op)) {
        case REMAT_OPP_NONE: return REMAT_UOP_UNARY;
        case REMAT_OPP_INT_EXPONENT: return REMAT_UOP_INTEGER_POW;
        case REMAT_OPP_EXPONENT: return REMAT_UOP_POW;
        case REMAT_OPP_FILL: case REMAT_OPP_ARG_POS: case REMAT_OPP_OUTPUT: case REMAT_OPP_AXIS:
        case REMAT_OPP_AXES: case REMAT_OPP_PERM: case REMAT_OPP_BDIMS: case REMAT_OPP_DOT:
        case REMAT_OPP_SOLVE: case REMAT_OPP_SLICE: case REMAT_OPP_PAD: case REMAT_OPP_CALL: case REMAT_OPP_CUSTOM:
        case REMAT_OPP_HOP: case REMAT_OPP_COUNT:
            return -1;
        }
        return -1;
    case REMAT_OPCAT_SELECT: return REMAT_UOP_SELECT;
    case REMAT_OPCAT_BINARY:
    case REMAT_OPCAT_COMPARE: return REMAT_UOP_BINARY;
    case REMAT_OPCAT_LEAF: case REMAT_OPCAT_CONVERT: case REMAT_OPCAT_REDUCE:
    case REMAT_OPCAT_STRUCTURAL: case REMAT_OPCAT_DOT: case REMAT_OPCAT_LINALG: case REMAT_OPCAT_IDENTITY:
    case REMAT_OPCAT_CUSTOM: case REMAT_OPCAT_CONTROL: case REMAT_OPCAT_COUNT:
        return -1;
    }
    return -1;
}
REMAT_EXHAUSTIVE_END
