/*
 * lanes_memo.h (internal) — one translation per loop body for the process.
 *
 * Translating a loop body into lane programs (scan_lanes.h) reads only the
 * body's graphs (and its VJP halves'), the loop's value descriptors and the
 * backend, and costs ~1 ms of graph rewriting per node; a fit builds the
 * same body again for each experiment and each output interval (64
 * experiments: 2944 loop nodes, a handful of bodies). So the translation's
 * inputs are written out as bytes (the key: every field the translator
 * reads, the graphs node by node with their constants, in order) and the
 * translated programs kept under that key: a node whose key is already there
 * takes the programs (read-only, shared) instead of translating. Lookups
 * compare whole keys, never a hash alone. Also kept per entry, once known:
 * the code the backend gave for the programs (backend_impl.h: functions
 * valid for the life of the process), so that later nodes ask no cache.
 *
 * Only translations that succeeded are kept (a failure may be out of
 * memory, which the next node should not inherit). Entries live for the
 * process, up to LANES_MEMO_MAX_BYTES of keys and programs; past that, nodes
 * translate on their own as before. Thread-safe (one lock; translating runs
 * outside it, two threads translating one body at once both translate and
 * the first kept wins).
 */
#ifndef REMAT_SCAN_LANES_MEMO_H
#define REMAT_SCAN_LANES_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan/scan_lanes.h"

/* The key under construction: bytes, and whether every write fitted in
 * memory (when not, the node translates on its own). With `flags` the
 * nodes' flags are written too (the compiler counts recomputed ops by
 * them; the translator does not read them). `opaque`: a custom op or a
 * higher-order primitive was met, which the key names by pointer only. */
typedef struct {
    unsigned char *p;
    size_t len, cap;
    bool ok, flags, opaque;
} lanes_key;

void rmi_lanes_key_put(lanes_key *k, const void *v, size_t n);
/* f's content as the translator reads it (rmi_fn_inline_calls dissolves
 * calls: a callee is written in place of its pointer). */
void rmi_lanes_key_fn(lanes_key *k, const remat_fn *f);
void rmi_lanes_key_descs(lanes_key *k, const scan_desc *d, int n);
void rmi_lanes_key_vjp(lanes_key *k, const scan_body_vjp *v);
void rmi_lanes_key_free(lanes_key *k);

/* What a translation produced: one view (a scan) or two (a while loop's
 * step and body), the while loop's EXIT buffer, the tier account's key. */
typedef struct {
    scan_lanes view[2];
    int n_views;
    int exit_buf;
    uint64_t pool_key;
} lanes_memo_val;

typedef struct lanes_memo_entry lanes_memo_entry;

/* The entry of key k, its value in *out (the views' programs and lane
 * strides point into the memo; fn[] zero), or NULL. */
lanes_memo_entry *rmi_lanes_memo_find(const lanes_key *k, lanes_memo_val *out);
/* Keeps a deep copy of v under k and returns its entry (the existing one
 * when another thread kept it first), or NULL when full or out of memory. */
lanes_memo_entry *rmi_lanes_memo_add(const lanes_key *k, const lanes_memo_val *v);

/* The code of the entry's n programs (every view's, in view then kernel
 * order): true with fn filled when a node already got it. */
bool rmi_lanes_memo_code(lanes_memo_entry *e, int n, remat_lane_fn *fn);
void rmi_lanes_memo_set_code(lanes_memo_entry *e, int n, const remat_lane_fn *fn);

/* Counts since the process started (tests): bodies translated, nodes that
 * took a kept translation instead, nodes that took its code. */
typedef struct {
    int64_t translated, reused, code_reused;
} remat_lanes_memo_stats;
void rmi_lanes_memo_stats_get(remat_lanes_memo_stats *s);
void rmi_lanes_memo_count_translation(void);

#endif
