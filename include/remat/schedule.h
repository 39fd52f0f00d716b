/*
 * remat/schedule.h — checkpoint schedules as pure action generators.
 *
 * A schedule knows step indices and slot numbers only, never tensors. The scan
 * runtime (src/scan) executes its actions with a snapshot store. Vocabulary
 * (Griewank–Walther, "Revolve"):
 *
 *   the runtime holds a "current" carry, carry_c (the state before step c,
 *   c in [0, n]); initially c = 0.
 *
 *   ADVANCE  to       evaluate steps c .. to-1 without recording; c := to
 *   TAKESHOT slot     snapshot slot := carry_c (slot < max_slots, and free:
 *                     a schedule FREEs a slot before reusing it)
 *   RESTORE  slot     carry_c := snapshot slot (c := that snapshot's index)
 *   FREE     slot     the slot's snapshot is dropped
 *   TAPE     step     c must equal step: evaluate it recording its residuals
 *                     (the step's "tape"), keep the tape; c := step+1
 *   END_FORWARD       the forward phase is over: c == n, every step has been
 *                     evaluated once in order (so all y_t are produced). The
 *                     reverse phase starts with the cotangent of carry_n.
 *   REVERSE  step     reverse one step: with a kept tape of `step`, use it and
 *                     drop it; otherwise c must equal step and the step is
 *                     evaluated with recording and reversed at once (then c is
 *                     undefined until the next RESTORE). Steps are reversed
 *                     exactly once each, from n-1 down to 0.
 *   DONE              nothing more; every slot has been freed.
 *
 * Tapes are kept and consumed last-in first-out: a REVERSE with a kept tape
 * always names the most recently taped step still kept.
 *
 * Forward step evaluations = steps advanced + TAPE steps + REVERSE steps
 * without a kept tape. The binomial optimum for l steps and s snapshots,
 * counting every evaluation, is l + F(l, s), F = t*l - C(s+t, t-1), t the
 * repetition number with C(s+t-1, s) < l <= C(s+t, s) (Griewank & Walther,
 * ACM TOMS 26(1), 2000). Snapshot counts follow Revolve: the snapshot of
 * carry 0 is one of the s.
 *
 * What each kind costs for n >= 1 steps (remat_schedule_predict):
 *
 *   kind          evaluations          snapshots       tapes
 *   store-all     n                    0               n
 *   per-step      2n - 1               n - 1           1
 *   periodic:K    n + (m-1)K           m - 1           min(K, n)   m = ceil(n/K)
 *   two-level     periodic:K with K = ceil(sqrt(n)) (two-level:K: that K)
 *   binomial:S    n + F(n, S)          min(S, n-1)     1
 *   online:S      n + F(n, S) while n <= (S+1)(S+2)/2;  min(S, n-1)  1
 *                 beyond, at most (t+1)n - (t-1)(S+1) - 1, t the repetition
 *                 number of (n, S) (see src/adjoint/sched_online.c)
 *   two-tier:S:D:W:R  the least evaluations + W disk_writes + R disk_reads
 *                 of any schedule with S RAM and D slow slots (the
 *                 multistage recursion of src/adjoint/sched_two_tier.c,
 *                 Aupy-Herrmann-Hovland-Robert 2016 / H-Revolve; with D = 0
 *                 binomial:S's count); its counts by replaying it; 1 tape.
 *                 Built exactly by dynamic programming, so n, S and D are
 *                 bounded (2 (n+1)(min(S,n)+1)(min(D,n)+1) <= 2^24)
 *
 * store-all never takes a snapshot: carry 0 is the scan's own input. n = 0
 * gives END_FORWARD then DONE for every kind, at no cost.
 *
 *   remat_schedule_spec spec = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10};
 *   remat_schedule *s;
 *   if (remat_schedule_new(&spec, 1000, &s) != REMAT_OK) ...;
 *   remat_action a;
 *   while (remat_schedule_next(s, &a), a.kind != REMAT_ACT_DONE) execute(&a);
 *   remat_schedule_free(s);
 *
 * Runs. Handing out actions one at a time costs a few ns each, about what a
 * whole step of a small scan body costs, so a schedule also hands out its
 * actions as runs (remat_action_run): `count` repetitions of a pattern of 1..3
 * actions, each repetition shifted by dstep (and dslot). A runtime executes a
 * run of TAPEs as one loop over steps, with no call per step. The kinds emit
 * (n = length; runs of one action written bare):
 *
 *   store-all   [TAPE 0] x n (dstep +1); END_FORWARD; [REVERSE n-1] x n
 *               (dstep -1); DONE
 *   per-step    [TAKESHOT 0 slot 0, ADVANCE 1] x (n-1) (dstep +1, dslot +1);
 *               TAPE n-1; END_FORWARD; REVERSE n-1;
 *               [RESTORE n-2 slot n-2, REVERSE n-2, FREE n-2 slot n-2] x (n-1)
 *               (dstep -1, dslot -1); DONE
 *   periodic:K  (two-level: K its period; m = ceil(n/K) segments)
 *   two-level   [TAKESHOT 0 slot 0, ADVANCE K] x (m-1) (dstep +K, dslot +1);
 *               the last segment L..n-1 (L = (m-1)K): [TAPE L] x (n-L);
 *               END_FORWARD; [REVERSE n-1] x (n-L); then for each segment
 *               j = m-2 .. 0 from a = jK: RESTORE a slot j; [TAPE a] x K;
 *               FREE a slot j; [REVERSE a+K-1] x K (dstep -1); DONE
 *   binomial:S  Revolve's repeated stretches: descents with splits of one
 *               step as [TAKESHOT c slot p, ADVANCE c+1] x m (dstep +1,
 *               dslot +1), one-step ranges reversed in a row as
 *               [RESTORE k slot p, REVERSE k, FREE k slot p] x m (dstep -1,
 *               dslot +-1), any other level of a descent as one run of count 1
 *               ([RESTORE a,] [TAKESHOT a,] ADVANCE a+j [, REVERSE a+j]);
 *               with S >= n-1 exactly per-step's runs
 *   online:S    single actions while the length is unknown; once revealed,
 *               [ADVANCE c+1] x m, [TAKESHOT c, ADVANCE c+1] x m and
 *               [FREE c-1 slot s, TAKESHOT c slot s, ADVANCE c+1] x m
 *               (dslot 0) in the forward phase, and binomial's shapes in the
 *               reverse phase
 *   two-tier    single actions (ADVANCE, TAKESHOT, RESTORE, FREE, the first
 *               turn, REVERSE)
 *
 * (runs with count 0 are left out: per-step with n = 1 is TAPE 0,
 * END_FORWARD, REVERSE 0, DONE). END_FORWARD and DONE always come as runs of
 * their own (n == 1, count == 1), so r.pat[0].kind tells them apart:
 *
 *   remat_action_run r;
 *   for (;;) {
 *       remat_schedule_next_run(s, &r);
 *       if (r.pat[0].kind == REMAT_ACT_DONE)
 *           break;
 *       if (r.n == 1 && r.pat[0].kind == REMAT_ACT_TAPE) {
 *           tape_steps(r.pat[0].step, r.count, r.dstep); // one tight loop
 *           continue;
 *       }
 *       for (int64_t k = 0; k < r.count; k++)
 *           for (int i = 0; i < r.n; i++) {
 *               remat_action a = remat_action_run_at(&r, k, i);
 *               execute(&a);
 *           }
 *   }
 */
#ifndef REMAT_SCHEDULE_H
#define REMAT_SCHEDULE_H

#include "export.h"

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    REMAT_SCHED_STORE_ALL = 0, /* tape every step in the forward phase */
    REMAT_SCHED_PER_STEP,      /* snapshot every carry, re-tape each step */
    REMAT_SCHED_PERIODIC,      /* snapshot every `period` steps; each segment re-run
                                  once with all its steps taped (CVODES style) */
    REMAT_SCHED_TWO_LEVEL,     /* periodic with period ceil(sqrt(n)) (or `period`) */
    REMAT_SCHED_BINOMIAL,      /* Revolve, `snapshots` slots, n known */
    REMAT_SCHED_ONLINE,        /* n unknown until the end, `snapshots` slots */
    REMAT_SCHED_TWO_TIER,      /* `snapshots` slots in RAM and `disk_snapshots` in a
                                  slower tier, optimal for its costs (below) */
    REMAT_SCHED_KIND_COUNT
} remat_schedule_kind;

typedef struct {
    remat_schedule_kind kind;
    int64_t period;    /* PERIODIC (>= 1); TWO_LEVEL: 0 = ceil(sqrt(n)) */
    int64_t snapshots; /* BINOMIAL, ONLINE (>= 1); TWO_TIER: RAM slots (>= 0) */
    /* TWO_TIER: slots in the slower tier (>= 0; with snapshots at least 1
     * in all), numbered after the RAM ones (slot >= snapshots is slow), and
     * the cost of writing and of reading one carry there, in units of one
     * step evaluation (finite, >= 0) */
    int64_t disk_snapshots;
    double disk_write, disk_read;
} remat_schedule_spec;

typedef enum {
    REMAT_ACT_ADVANCE = 0,
    REMAT_ACT_TAKESHOT,
    REMAT_ACT_RESTORE,
    REMAT_ACT_FREE,
    REMAT_ACT_TAPE,
    REMAT_ACT_END_FORWARD,
    REMAT_ACT_REVERSE,
    REMAT_ACT_DONE
} remat_action_kind;

typedef struct {
    remat_action_kind kind;
    int64_t step; /* ADVANCE: target index `to`; TAPE/REVERSE: the step;
                     TAKESHOT/RESTORE/FREE: the carry index held by the slot;
                     END_FORWARD/DONE: n */
    int slot;     /* TAKESHOT/RESTORE/FREE; -1 for the other kinds */
} remat_action;

/* A run: `count` (>= 1) repetitions of a pattern of 1..3 actions; repetition r
 * is the pattern with every action's step += r*dstep and, for actions with a
 * slot (TAKESHOT/RESTORE/FREE), slot += r*dslot. pat[n..] are unused. */
#define REMAT_RUN_MAX_PATTERN 3
typedef struct {
    int n; /* actions in the pattern, 1 .. REMAT_RUN_MAX_PATTERN */
    remat_action pat[REMAT_RUN_MAX_PATTERN];
    int64_t count;
    int64_t dstep;
    int dslot;
} remat_action_run;

/* Repetition k (0 <= k < count), action i (0 <= i < n) of a run. */
static inline remat_action remat_action_run_at(const remat_action_run *r, int64_t k, int i)
{
    if (!r) /* inline, so no message: the end, as a NULL schedule's next() */
        return (remat_action){.kind = REMAT_ACT_DONE, .step = 0, .slot = -1};
    remat_action a = r->pat[i];
    a.step += k * r->dstep;
    if (a.kind == REMAT_ACT_TAKESHOT || a.kind == REMAT_ACT_RESTORE || a.kind == REMAT_ACT_FREE)
        a.slot += (int)(k * r->dslot);
    return a;
}

/* What a schedule predicts (and what the runtime's measured counts must equal). */
typedef struct {
    int64_t forward_evals;  /* every body evaluation, taped ones included */
    int64_t peak_snapshots; /* most snapshot slots live at once */
    int64_t peak_tapes;     /* most step tapes kept at once, counting the one a
                               REVERSE without a kept tape records for its step
                               (so any schedule with n >= 1 has at least 1) */
    /* TWO_TIER (0 for the others): peak_snapshots counts the RAM slots;
     * these the slower tier's, and its snapshot writes and reads */
    int64_t peak_disk_snapshots;
    int64_t disk_writes, disk_reads;
} remat_schedule_cost;

typedef struct remat_schedule remat_schedule;

/* Parse "store-all", "per-step", "periodic:K", "two-level", "two-level:K",
 * "binomial:S", "online:S", "two-tier:S:D" (costs 1, 1) or
 * "two-tier:S:D:W:R". Errors name the offending text. */
REMAT_API remat_status remat_schedule_parse(const char *text, remat_schedule_spec *spec);
/* Inverse of parse, e.g. "binomial:10"; a NULL spec writes "(null)". */
REMAT_API void remat_schedule_format(const remat_schedule_spec *spec, char *buf, int len);

/* length >= 0. For ONLINE the generator does not read `length` up front (it
 * is ignored; pass -1 when unknown): the runtime reveals it through
 * remat_schedule_set_length() (see below), so the same code serves adaptive
 * stepping. Rejects bad specs with a message. All state is allocated here. */
REMAT_API remat_status remat_schedule_new(const remat_schedule_spec *spec, int64_t length,
                                          remat_schedule **out);
/* ONLINE: the runtime must call this before asking for the action that would
 * evaluate step n-1 (i.e. as soon as it knows the step it is about to take
 * is the last one): at the latest, before the next() call made while its
 * current carry is n-1; for n = 0, before the first next(). Revealing it
 * earlier changes nothing (the generator acts on it only when its forward
 * phase reaches carry n-1, so predict() is exact either way); revealing it
 * too late aborts, as does a second call with another length. For other
 * kinds it is a no-op check (aborts if length differs from the one given to
 * remat_schedule_new). */
REMAT_API void remat_schedule_set_length(remat_schedule *s, int64_t length);
/* Next action; after DONE keeps returning DONE. No allocation per call. */
REMAT_API void remat_schedule_next(remat_schedule *s, remat_action *a);
/* Next run (see the overview); after DONE keeps returning a run of one DONE.
 * Expanding every run in order gives exactly the actions remat_schedule_next()
 * would give, and the two may be mixed on one schedule: next() takes the
 * actions of the current run one by one, and a next_run() after next() has
 * taken part of a run returns the rest of it, first the rest of the current
 * repetition (as a run with count 1) if next() stopped inside one, then the
 * remaining repetitions. No allocation per call.
 * ONLINE: while the length is unknown its runs are single actions, so
 * remat_schedule_set_length() applies per run: reveal the length before the
 * next_run() call made while the current carry (after executing every
 * earlier run) is n-1 (or at once, when it is known). */
REMAT_API void remat_schedule_next_run(remat_schedule *s, remat_action_run *r);
/* A NULL schedule (remat_last_error() set): set_length does nothing, next
 * gives DONE (step 0, slot -1), next_run a run of one DONE, max_slots -1. */
/* Slots this schedule may use (snapshot store size to allocate). */
REMAT_API int64_t remat_schedule_max_slots(const remat_schedule *s);
REMAT_API void remat_schedule_free(remat_schedule *s);

/* Predicted cost for a known length (ONLINE: the cost it will incur when the
 * length turns out to be `length`; it replays the online decisions, O(length)
 * time). */
REMAT_API remat_status remat_schedule_predict(const remat_schedule_spec *spec, int64_t length,
                                              remat_schedule_cost *cost);
/* l + F(l, s): the binomial optimum of forward evaluations (see above);
 * 0 for l <= 0, -1 when s < 1 and l >= 2 (no schedule exists), INT64_MAX when
 * it does not fit. */
REMAT_API int64_t remat_binomial_optimum(int64_t length, int64_t snapshots);

/* The fastest schedule (fewest forward evaluations; ties: less memory) whose
 * peak memory, peak_snapshots*carry_bytes + peak_tapes*tape_bytes, fits in
 * budget_bytes. REMAT_ERR_BUDGET with a message giving the minimum if none fits.
 * It weighs store-all, binomial with the most snapshots that fit (S = n-1 is
 * per-step) and every useful periodic period; periodic wins when tapes are
 * cheap next to carries. Online is never picked: with n known, binomial is at
 * least as good. */
REMAT_API remat_status remat_schedule_for_budget(int64_t budget_bytes, int64_t length,
                                                 int64_t carry_bytes, int64_t tape_bytes,
                                                 remat_schedule_spec *spec);

/* With a slower tier beside RAM: remat_schedule_for_budget's choice for
 * ram_bytes, or two-tier:S:D:W:R (S carries in RAM beside one tape, D =
 * disk_bytes / carry_bytes, both at most n-1; W, R the tier's costs per
 * carry in step evaluations), whichever costs less in the two-tier model
 * (evaluations + W writes + R reads). Store-all within RAM is kept as it
 * is; a two-tier table too large to build (remat_schedule_new says) leaves
 * the RAM-only choice. REMAT_ERR_BUDGET when neither fits. */
REMAT_API remat_status remat_schedule_for_tiers(int64_t ram_bytes, int64_t disk_bytes, int64_t length,
                                                int64_t carry_bytes, int64_t tape_bytes, double disk_write,
                                                double disk_read, remat_schedule_spec *spec);

#ifdef __cplusplus
}
#endif
#endif
