/* ode_registry.c — the ODE custom ops' contexts, freed at exit (ode_registry.h). */
#include "models/ode/ode_registry.h"

#include <pthread.h>
#include <stddef.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ode_registry_entry *registry;

void ode_registry_add(ode_registry_entry *e, void *ctx, void (*release)(void *ctx))
{
    e->ctx = ctx;
    e->release = release;
    pthread_mutex_lock(&registry_lock);
    e->next = registry;
    registry = e;
    pthread_mutex_unlock(&registry_lock);
}

__attribute__((destructor)) static void registry_free(void)
{
    pthread_mutex_lock(&registry_lock);
    for (ode_registry_entry *e = registry, *n; e; e = n) {
        n = e->next; /* e lies in the context release frees */
        e->release(e->ctx);
    }
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
}
