/*
 * jit_gen.h (internal) — writes one lane program (backend/lane.h) as a
 * libgccjit function; jit.c compiles, caches and loads the result.
 */
#ifndef REMAT_CPU_JIT_GEN_H
#define REMAT_CPU_JIT_GEN_H

#include "backend/cpu/jit_lib.h"

#include "backend/lane.h"

enum { M_EXP, M_LOG, M_SIN, M_COS, M_TANH, M_SQRT, M_ERF, M_LOG1P, M_EXPM1, M_POW, M_COUNT };

/* The exported global of a compilation holding a blocked program (jit.c's
 * header): the pointer to vmath.h's rmi_vm_map_any, which the loader sets
 * (jit.c) before any function of the code runs. */
#define RMI_JIT_VMAP "remat_lane_vmap"

/* Whether p is written as a blocked program (jit.c's header), whose code
 * then defines RMI_JIT_VMAP: a compilation without one has no such symbol,
 * and looking it up in libgccjit's result prints dlsym's complaint. */
bool rmi_jit_blocked(const remat_lane_program *p);

/* The libm functions a context imports, each once, and its map pointer
 * (zero-initialise). */
typedef struct {
    gcc_jit_function *fn[2][M_COUNT]; /* [f32, f64][which] */
    gcc_jit_lvalue *vmap;
    gcc_jit_type *vmap_t;
} remat_jit_math;

/* Adds the exported function `name`, void name(char **bufs, long long
 * *strides, long long count, long long lanes), computing program p to
 * context c (jit.c's header shows its shape). Returns 1 when made, 0 when p holds an
 * instruction this generator does not know (the caller interprets), -1 when
 * out of memory. */
int rmi_jit_generate(gcc_jit_context *c, remat_jit_math *math, const remat_lane_program *p, const char *name);

#endif
