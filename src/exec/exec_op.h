/* exec_op.h (internal) — a node's parameters as a backend sees them. */
#ifndef REMAT_EXEC_EXEC_OP_H
#define REMAT_EXEC_EXEC_OP_H

#include "ad/graph_view.h"
#include "backend/backend_impl.h"

/* Copies the parameter member n's op uses (by its parameter kind) into op->p. */
void rmi_exec_op_params(const remat_node *n, remat_exec_op *op);
/* The same for one micro-op of a fused group (elementwise ops only). */
void rmi_fused_uop_params(const remat_node *n, remat_fused_uop *u);

#endif
