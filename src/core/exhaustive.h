/*
 * exhaustive.h (internal) — switches the compiler checks for completeness.
 *
 * Between REMAT_EXHAUSTIVE_BEGIN and REMAT_EXHAUSTIVE_END a switch on an
 * enum (remat_op, its category or parameter kind) that misses an enumerator
 * is a build error. The switches there have no `default`, so -Wswitch
 * catches every missing case (made an error here; GCC 12 cannot turn
 * -Wswitch-enum on from a pragma, clang can, and without a default the two
 * agree). Per-op code (kernels, VJP rules, the JIT, lane translation) is
 * written this way, so a row added to REMAT_OP_LIST does not build until each
 * of them handles it. Put the markers around whole functions.
 */
#ifndef REMAT_CORE_EXHAUSTIVE_H
#define REMAT_CORE_EXHAUSTIVE_H

#define REMAT_EXHAUSTIVE_BEGIN                                                        \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic error \"-Wswitch\"")       \
        _Pragma("GCC diagnostic error \"-Wswitch-enum\"")
#define REMAT_EXHAUSTIVE_END _Pragma("GCC diagnostic pop")

#endif
