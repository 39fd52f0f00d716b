/*
 * copy_op.h (internal) — the CPU's copy plan of a structural op, chosen by
 * the op's parameter kind. The CPU backend runs the plan
 * (rmi_cpu_copy_run); the CUDA backend turns it into strides for its one
 * copy kernel (kernels/cuda/lower.c), so both move the same elements.
 */
#ifndef REMAT_CPU_COPY_OP_H
#define REMAT_CPU_COPY_OP_H

#include <stdbool.h>

#include "backend/backend_impl.h"
#include "backend/cpu/cpu_kernels.h"

/* n elements of dt copied contiguously: a materialised reshape or identity */
remat_cpu_copy_plan rmi_cpu_contig_plan(remat_dtype dt, size_t n);

/* The plan of a structural op writing n elements: reshape, transpose,
 * broadcast_in_dim, slice or pad. false for a parameter kind with no copy
 * plan (concatenate has its own, rmi_cpu_concatenate_plan). */
bool rmi_cpu_copy_plan_of(remat_cpu_copy_plan *p, const remat_exec_op *op, size_t n);

#endif
