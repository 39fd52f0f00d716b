/*
 * ode_registry.h — the contexts of the ODE custom ops (backsolve.c,
 * interp.c, bdf_mech.c), kept until exit.
 *
 * A custom op's context (its struct and compiled programs) must outlive
 * every program that uses the op, which may outlive the function it was
 * built in; nothing says when the last such program is freed, so each
 * context is registered once built and freed by one destructor at exit.
 * The entry lives inside the context (no allocation, no failure).
 */
#ifndef REMAT_MODELS_ODE_REGISTRY_H
#define REMAT_MODELS_ODE_REGISTRY_H

typedef struct ode_registry_entry {
    struct ode_registry_entry *next;
    void (*release)(void *ctx); /* frees ctx, its lock and everything it owns */
    void *ctx;
} ode_registry_entry;

/* Keeps ctx until exit, when release(ctx) is called (thread-safe). e lies in ctx. */
void ode_registry_add(ode_registry_entry *e, void *ctx, void (*release)(void *ctx));

#endif
