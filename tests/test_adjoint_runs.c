/*
 * test_adjoint_runs.c — remat_schedule_next_run(), the run-length form of a
 * schedule (remat/schedule.h).
 *
 * For every kind over a grid of lengths, expanding the runs (by the header's
 * definition, written out again here) gives exactly the actions of
 * remat_schedule_next(), field by field, with the online length revealed as
 * early and as late as the header allows; mixing next() and next_run() on one
 * schedule changes nothing; store-all, per-step and periodic emit exactly the
 * runs the header lists (so a runtime can rely on their shape); binomial and
 * online group Revolve's repeated stretches into runs (far fewer runs than
 * actions), hand out single actions while an online length is unknown, and
 * binomial with s >= n-1 is per-step, runs included. That the action stream
 * itself is a valid schedule with the predicted cost is test_adjoint.c's job.
 */
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "remat/schedule.h"

static const int64_t grid_n[] = {0, 1, 2, 3, 5, 7, 16, 31, 100, 1000};
#define GRID_N (sizeof grid_n / sizeof grid_n[0])

static const remat_schedule_spec grid_specs[] = {
    {.kind = REMAT_SCHED_STORE_ALL},
    {.kind = REMAT_SCHED_PER_STEP},
    {.kind = REMAT_SCHED_PERIODIC, .period = 1},
    {.kind = REMAT_SCHED_PERIODIC, .period = 3},
    {.kind = REMAT_SCHED_PERIODIC, .period = 32},
    {.kind = REMAT_SCHED_TWO_LEVEL},
    {.kind = REMAT_SCHED_TWO_LEVEL, .period = 5},
    {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 1},
    {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 2},
    {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3},
    {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10},
    {.kind = REMAT_SCHED_ONLINE, .snapshots = 1},
    {.kind = REMAT_SCHED_ONLINE, .snapshots = 3},
    {.kind = REMAT_SCHED_ONLINE, .snapshots = 10},
};
#define GRID_SPECS (sizeof grid_specs / sizeof grid_specs[0])

static const char *const kind_names[] = {"ADVANCE", "TAKESHOT", "RESTORE",     "FREE",
                                         "TAPE",    "END_FORWARD", "REVERSE", "DONE"};

static bool has_slot(remat_action_kind kind)
{
    return kind == REMAT_ACT_TAKESHOT || kind == REMAT_ACT_RESTORE || kind == REMAT_ACT_FREE;
}

/* Repetition k, action i of r, as remat/schedule.h defines it. */
static remat_action run_action(const remat_action_run *r, int64_t k, int i)
{
    remat_action a = r->pat[i];
    a.step += k * r->dstep;
    if (has_slot(a.kind))
        a.slot += (int)(k * r->dslot);
    return a;
}

/* The promises about a run's form: 1..3 actions, count >= 1, slots only on
 * the kinds that have one, END_FORWARD and DONE only as runs of their own. */
static void check_run_form(const remat_action_run *r, const char *where)
{
    if (r->n < 1 || r->n > REMAT_RUN_MAX_PATTERN || r->count < 1)
        fail_msg("%s: run with n %d, count %lld", where, r->n, (long long)r->count);
    for (int i = 0; i < r->n; i++) {
        remat_action_kind kind = r->pat[i].kind;
        if ((int)kind < 0 || kind > REMAT_ACT_DONE)
            fail_msg("%s: action kind %d", where, (int)kind);
        if (has_slot(kind) ? r->pat[i].slot < 0 : r->pat[i].slot != -1)
            fail_msg("%s: %s with slot %d", where, kind_names[kind], r->pat[i].slot);
        if ((kind == REMAT_ACT_END_FORWARD || kind == REMAT_ACT_DONE) && (r->n != 1 || r->count != 1))
            fail_msg("%s: %s inside a run of %d x %lld", where, kind_names[kind], r->n,
                     (long long)r->count);
    }
}

static void check_same_action(const remat_action *want, const remat_action *got, const char *where,
                              int64_t index)
{
    if (want->kind != got->kind || want->step != got->step || want->slot != got->slot)
        fail_msg("%s: action %lld: next() gives %s step %lld slot %d, the runs %s step %lld slot %d",
                 where, (long long)index, kind_names[want->kind], (long long)want->step, want->slot,
                 kind_names[got->kind], (long long)got->step, got->slot);
}

/* ---- a schedule with the runtime's bookkeeping ------------------------------
 * Tracks the current carry from the actions handed out, so that an online
 * length is revealed when the header says it must be at the latest (before
 * the call made at carry n-1), or right after remat_schedule_new. */

typedef enum { REVEAL_LATE, REVEAL_EARLY } reveal_mode;

typedef struct {
    remat_schedule *s;
    int64_t n, c;
    bool online, revealed;
    reveal_mode reveal;
} tracked;

static void tracked_new(tracked *t, const remat_schedule_spec *spec, int64_t n, reveal_mode reveal)
{
    *t = (tracked){.n = n, .online = spec->kind == REMAT_SCHED_ONLINE, .reveal = reveal};
    assert_ok(remat_schedule_new(spec, t->online ? -1 : n, &t->s));
}

static void tracked_before_call(tracked *t)
{
    if (t->online && !t->revealed && (t->reveal == REVEAL_EARLY || t->n == 0 || t->c == t->n - 1)) {
        remat_schedule_set_length(t->s, t->n);
        t->revealed = true;
    }
}

static void tracked_saw(tracked *t, const remat_action *a)
{
    switch (a->kind) {
    case REMAT_ACT_ADVANCE:
    case REMAT_ACT_RESTORE: t->c = a->step; break;
    case REMAT_ACT_TAPE: t->c = a->step + 1; break;
    case REMAT_ACT_REVERSE: t->c = -1; break;
    default: break;
    }
}

static remat_action tracked_next(tracked *t)
{
    tracked_before_call(t);
    remat_action a;
    remat_schedule_next(t->s, &a);
    tracked_saw(t, &a);
    return a;
}

static remat_action_run tracked_next_run(tracked *t, const char *where)
{
    tracked_before_call(t);
    remat_action_run r;
    remat_schedule_next_run(t->s, &r);
    check_run_form(&r, where);
    for (int64_t k = 0; k < r.count; k++)
        for (int i = 0; i < r.n; i++) {
            remat_action a = run_action(&r, k, i);
            tracked_saw(t, &a);
        }
    return r;
}

static void spec_name(const remat_schedule_spec *spec, int64_t n, reveal_mode reveal, char *buf,
                      int len)
{
    char name[48];
    remat_schedule_format(spec, name, sizeof name);
    snprintf(buf, (size_t)len, "%s n=%lld%s", name, (long long)n,
             spec->kind == REMAT_SCHED_ONLINE ? (reveal == REVEAL_EARLY ? " (early)" : " (late)") : "");
}

/* After DONE: next() keeps giving DONE and next_run() a run of one DONE. */
static void check_done_stays(tracked *t, const char *where)
{
    for (int rep = 0; rep < 3; rep++) {
        remat_action_run r = tracked_next_run(t, where);
        if (r.n != 1 || r.count != 1 || r.pat[0].kind != REMAT_ACT_DONE || r.pat[0].step != t->n)
            fail_msg("%s: after DONE next_run gives %d x %lld of %s", where, r.n, (long long)r.count,
                     kind_names[r.pat[0].kind]);
        remat_action a = tracked_next(t);
        if (a.kind != REMAT_ACT_DONE)
            fail_msg("%s: after DONE next gives %s", where, kind_names[a.kind]);
    }
}

/* ---- runs expand to the actions --------------------------------------------- */

/* Two copies of the schedule in lockstep: one read with next(), one with
 * next_run() and expanded. Returns the number of runs. */
static int64_t check_runs_expand(const remat_schedule_spec *spec, int64_t n, reveal_mode reveal)
{
    char where[96];
    spec_name(spec, n, reveal, where, sizeof where);
    tracked ref, runs;
    tracked_new(&ref, spec, n, reveal);
    tracked_new(&runs, spec, n, reveal);
    int64_t nruns = 0, index = 0, limit = 64 * (n + 4) * (n + 4) + 1000;
    for (;;) {
        remat_action_run r = tracked_next_run(&runs, where);
        nruns++;
        for (int64_t k = 0; k < r.count; k++)
            for (int i = 0; i < r.n; i++, index++) {
                remat_action want = tracked_next(&ref), got = run_action(&r, k, i);
                check_same_action(&want, &got, where, index);
                assert_true(index < limit);
            }
        if (r.pat[0].kind == REMAT_ACT_DONE)
            break;
    }
    check_done_stays(&runs, where);
    remat_schedule_free(ref.s);
    remat_schedule_free(runs.s);
    return nruns;
}

static void test_adjoint_runs_expand_to_next_every_kind(void **state)
{
    (void)state;
    for (size_t i = 0; i < GRID_SPECS; i++)
        for (size_t j = 0; j < GRID_N; j++) {
            check_runs_expand(&grid_specs[i], grid_n[j], REVEAL_LATE);
            if (grid_specs[i].kind == REMAT_SCHED_ONLINE)
                check_runs_expand(&grid_specs[i], grid_n[j], REVEAL_EARLY);
        }
}

/* n = 0 is END_FORWARD then DONE for every kind. */
static void test_adjoint_runs_zero_length_every_kind(void **state)
{
    (void)state;
    for (size_t i = 0; i < GRID_SPECS; i++)
        assert_int_equal(check_runs_expand(&grid_specs[i], 0, REVEAL_LATE), 2);
}

/* Binomial and online over a finer grid: every length 1..40, then 100 and
 * 1000, with 1, 2, 3, 5, 10 snapshots (more snapshots than steps included,
 * where Revolve degenerates to per-step), online with its length revealed as
 * early and as late as allowed. */
static void test_adjoint_runs_expand_binomial_online_grid(void **state)
{
    (void)state;
    static const int64_t snaps[] = {1, 2, 3, 5, 10};
    static const remat_schedule_kind kinds[] = {REMAT_SCHED_BINOMIAL, REMAT_SCHED_ONLINE};
    for (size_t k = 0; k < 2; k++)
        for (size_t j = 0; j < sizeof snaps / sizeof snaps[0]; j++) {
            remat_schedule_spec spec = {.kind = kinds[k], .snapshots = snaps[j]};
            for (int64_t n = 1; n <= 42; n++) {
                int64_t len = n <= 40 ? n : (n == 41 ? 100 : 1000);
                check_runs_expand(&spec, len, REVEAL_LATE);
                if (kinds[k] == REMAT_SCHED_ONLINE)
                    check_runs_expand(&spec, len, REVEAL_EARLY);
            }
        }
}

/* What the runs of one schedule add up to. */
typedef struct {
    int64_t actions, runs;
    int64_t repeated;      /* actions in runs with count >= 2 */
    int64_t shot_advance;  /* repetitions of [TAKESHOT c, ADVANCE c+1] (dstep +1) */
    int64_t restore_rev;   /* repetitions of [RESTORE k, REVERSE k, FREE k] (dstep -1) */
} run_stats;

static run_stats count_runs(const remat_schedule_spec *spec, int64_t n, reveal_mode reveal)
{
    char where[96];
    spec_name(spec, n, reveal, where, sizeof where);
    tracked t;
    tracked_new(&t, spec, n, reveal);
    run_stats st = {0};
    for (;;) {
        remat_action_run r = tracked_next_run(&t, where);
        if (r.pat[0].kind == REMAT_ACT_DONE)
            break;
        st.runs++;
        st.actions += r.n * r.count;
        if (r.count >= 2)
            st.repeated += r.n * r.count;
        const remat_action *p = r.pat;
        if (r.n == 2 && p[0].kind == REMAT_ACT_TAKESHOT && p[1].kind == REMAT_ACT_ADVANCE &&
            p[1].step == p[0].step + 1 && (r.count == 1 || r.dstep == 1))
            st.shot_advance += r.count;
        if (r.n == 3 && p[0].kind == REMAT_ACT_RESTORE && p[1].kind == REMAT_ACT_REVERSE &&
            p[2].kind == REMAT_ACT_FREE && p[1].step == p[0].step && p[2].step == p[0].step &&
            p[2].slot == p[0].slot && (r.count == 1 || r.dstep == -1))
            st.restore_rev += r.count;
    }
    remat_schedule_free(t.s);
    return st;
}

/* Revolve's stream is mostly repeated stretches: descents with splits of 1
 * (snapshot, advance one step), one-step ranges restored and reversed in a
 * row, one-snapshot turns. Measured (actions / runs, excluding DONE):
 *   binomial:10 n=1000   4428 / 1013, 2875 actions in repeated runs,
 *                        449 shot/advance and 714 restore/reverse steps
 *   binomial:3  n=1000   3308 / 1139      binomial:1 n=1000  3002 / 1003
 *   online:10   n=1000   7387 / 2449 (length known from the start)
 * (each was one run per action before). The bounds below leave a little room
 * and fail if the grouping is lost. */
static void test_adjoint_runs_binomial_online_fewer_runs(void **state)
{
    (void)state;
    remat_schedule_spec b10 = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10};
    run_stats st = count_runs(&b10, 1000, REVEAL_LATE);
    assert_int_equal(st.actions, 4428);
    assert_true(st.runs * 4 < st.actions);
    assert_true(st.repeated * 5 > st.actions * 3); /* over 60% in repeated runs */
    assert_true(st.shot_advance >= 400);
    assert_true(st.restore_rev >= 700);

    remat_schedule_spec b3 = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3};
    st = count_runs(&b3, 1000, REVEAL_LATE);
    assert_true(st.runs * 5 < st.actions * 2);
    remat_schedule_spec b1 = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 1};
    st = count_runs(&b1, 1000, REVEAL_LATE);
    assert_true(st.runs * 5 < st.actions * 2);

    remat_schedule_spec o10 = {.kind = REMAT_SCHED_ONLINE, .snapshots = 10};
    st = count_runs(&o10, 1000, REVEAL_EARLY);
    assert_int_equal(st.actions, 7387);
    assert_true(st.runs * 5 < st.actions * 2);
    assert_true(st.restore_rev >= 700);
}

/* While an online length is unknown, every run is a single action (the
 * runtime may reveal the length between any two, remat/schedule.h); only
 * once it is known do runs of more come out. */
static void test_adjoint_runs_online_single_until_revealed(void **state)
{
    (void)state;
    static const int64_t snaps[] = {1, 3, 10};
    for (size_t j = 0; j < sizeof snaps / sizeof snaps[0]; j++)
        for (size_t i = 0; i < GRID_N; i++) {
            remat_schedule_spec spec = {.kind = REMAT_SCHED_ONLINE, .snapshots = snaps[j]};
            tracked t;
            tracked_new(&t, &spec, grid_n[i], REVEAL_LATE);
            int64_t longer = 0;
            for (;;) {
                remat_action_run r = tracked_next_run(&t, "online (late)");
                if (!t.revealed && (r.n != 1 || r.count != 1))
                    fail_msg("online:%lld n=%lld: a run of %d x %lld before the length is known",
                             (long long)snaps[j], (long long)grid_n[i], r.n, (long long)r.count);
                longer += r.n > 1 || r.count > 1;
                if (r.pat[0].kind == REMAT_ACT_DONE)
                    break;
            }
            if (grid_n[i] >= 100)
                assert_true(longer > 0);
            remat_schedule_free(t.s);
        }
}

/* next() and next_run() interleaved at random on one schedule give the
 * stream of next() alone: next_run() after a partly taken run returns the
 * rest of it. */
static void test_adjoint_runs_mixed_with_next(void **state)
{
    (void)state;
    for (size_t i = 0; i < GRID_SPECS; i++)
        for (size_t j = 0; j < GRID_N; j++) {
            const remat_schedule_spec *spec = &grid_specs[i];
            int64_t n = grid_n[j];
            char where[96];
            spec_name(spec, n, REVEAL_LATE, where, sizeof where);
            tracked ref, mix;
            tracked_new(&ref, spec, n, REVEAL_LATE);
            tracked_new(&mix, spec, n, REVEAL_LATE);
            int64_t index = 0;
            for (bool done = false; !done;) {
                if (rng_next() >> 62) { /* 3 in 4: one action with next() */
                    remat_action want = tracked_next(&ref), got = tracked_next(&mix);
                    check_same_action(&want, &got, where, index++);
                    done = got.kind == REMAT_ACT_DONE;
                    continue;
                }
                remat_action_run r = tracked_next_run(&mix, where);
                for (int64_t k = 0; k < r.count; k++)
                    for (int a = 0; a < r.n; a++) {
                        remat_action want = tracked_next(&ref), got = run_action(&r, k, a);
                        check_same_action(&want, &got, where, index++);
                    }
                done = r.pat[0].kind == REMAT_ACT_DONE;
            }
            check_done_stays(&mix, where);
            remat_schedule_free(ref.s);
            remat_schedule_free(mix.s);
        }
}

/* The split spelled out: per-step n = 5, one action taken with next(). */
static void test_adjoint_runs_rest_of_a_partly_taken_run(void **state)
{
    (void)state;
    remat_schedule_spec spec = {.kind = REMAT_SCHED_PER_STEP};
    remat_schedule *s;
    assert_ok(remat_schedule_new(&spec, 5, &s));
    remat_action a;
    remat_schedule_next(s, &a);
    assert_int_equal(a.kind, REMAT_ACT_TAKESHOT);
    remat_action_run r;
    remat_schedule_next_run(s, &r); /* the rest of repetition 0 */
    assert_int_equal(r.n, 1);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.pat[0].kind, REMAT_ACT_ADVANCE);
    assert_int_equal(r.pat[0].step, 1);
    remat_schedule_next_run(s, &r); /* repetitions 1 .. 3 */
    assert_int_equal(r.n, 2);
    assert_int_equal(r.count, 3);
    assert_int_equal(r.pat[0].kind, REMAT_ACT_TAKESHOT);
    assert_int_equal(r.pat[0].step, 1);
    assert_int_equal(r.pat[0].slot, 1);
    assert_int_equal(r.pat[1].kind, REMAT_ACT_ADVANCE);
    assert_int_equal(r.pat[1].step, 2);
    assert_int_equal(r.dstep, 1);
    assert_int_equal(r.dslot, 1);
    remat_schedule_next(s, &a); /* the next run, from its start */
    assert_int_equal(a.kind, REMAT_ACT_TAPE);
    assert_int_equal(a.step, 4);
    remat_schedule_free(s);
}

/* ---- the shapes the header promises ------------------------------------------ */

typedef struct {
    remat_action_run *run;
    int64_t len, cap;
} run_list;

static void push(run_list *l, int n, const remat_action *pat, int64_t count, int64_t dstep,
                 int dslot)
{
    assert_true(l->len < l->cap);
    remat_action_run *r = &l->run[l->len++];
    *r = (remat_action_run){.n = n, .count = count, .dstep = dstep, .dslot = dslot};
    for (int i = 0; i < n; i++)
        r->pat[i] = pat[i];
}

static remat_action act(remat_action_kind kind, int64_t step, int slot)
{
    return (remat_action){.kind = kind, .step = step, .slot = slot};
}

/* One action, count 1. */
static void push1(run_list *l, remat_action_kind kind, int64_t step, int slot)
{
    push(l, 1, (remat_action[]){act(kind, step, slot)}, 1, 0, 0);
}

/* Compares the schedule's runs with the list. dstep and dslot only matter
 * when count > 1 (dslot only with a slot in the pattern). */
static void check_runs_equal(const remat_schedule_spec *spec, int64_t n, const run_list *want)
{
    char where[96];
    spec_name(spec, n, REVEAL_LATE, where, sizeof where);
    remat_schedule *s;
    assert_ok(remat_schedule_new(spec, n, &s));
    for (int64_t j = 0; j < want->len; j++) {
        const remat_action_run *w = &want->run[j];
        remat_action_run g;
        remat_schedule_next_run(s, &g);
        check_run_form(&g, where);
        bool slots = false;
        for (int i = 0; i < w->n; i++)
            slots |= has_slot(w->pat[i].kind);
        bool same = g.n == w->n && g.count == w->count &&
                    (w->count == 1 || (g.dstep == w->dstep && (!slots || g.dslot == w->dslot)));
        for (int i = 0; same && i < w->n; i++)
            same = g.pat[i].kind == w->pat[i].kind && g.pat[i].step == w->pat[i].step &&
                   g.pat[i].slot == w->pat[i].slot;
        if (!same)
            fail_msg("%s: run %lld is %d x %lld starting %s step %lld (dstep %lld dslot %d), "
                     "want %d x %lld starting %s step %lld (dstep %lld dslot %d)",
                     where, (long long)j, g.n, (long long)g.count, kind_names[g.pat[0].kind],
                     (long long)g.pat[0].step, (long long)g.dstep, g.dslot, w->n,
                     (long long)w->count, kind_names[w->pat[0].kind], (long long)w->pat[0].step,
                     (long long)w->dstep, w->dslot);
    }
    remat_schedule_free(s);
}

static void test_adjoint_runs_store_all_shape(void **state)
{
    (void)state;
    remat_schedule_spec spec = {.kind = REMAT_SCHED_STORE_ALL};
    remat_action_run buf[4];
    for (size_t j = 0; j < GRID_N; j++) {
        int64_t n = grid_n[j];
        run_list l = {.run = buf, .cap = 4};
        if (n >= 1)
            push(&l, 1, (remat_action[]){act(REMAT_ACT_TAPE, 0, -1)}, n, 1, 0);
        push1(&l, REMAT_ACT_END_FORWARD, n, -1);
        if (n >= 1)
            push(&l, 1, (remat_action[]){act(REMAT_ACT_REVERSE, n - 1, -1)}, n, -1, 0);
        push1(&l, REMAT_ACT_DONE, n, -1);
        assert_int_equal(l.len, n >= 1 ? 4 : 2);
        check_runs_equal(&spec, n, &l);
    }
}

/* The runs remat/schedule.h lists for per-step over n steps (buf: 6 runs). */
static run_list per_step_runs(remat_action_run *buf, int64_t n)
{
    run_list l = {.run = buf, .cap = 6};
    if (n >= 2)
        push(&l, 2, (remat_action[]){act(REMAT_ACT_TAKESHOT, 0, 0), act(REMAT_ACT_ADVANCE, 1, -1)},
             n - 1, 1, 1);
    if (n >= 1)
        push1(&l, REMAT_ACT_TAPE, n - 1, -1);
    push1(&l, REMAT_ACT_END_FORWARD, n, -1);
    if (n >= 1)
        push1(&l, REMAT_ACT_REVERSE, n - 1, -1);
    if (n >= 2)
        push(&l, 3,
             (remat_action[]){act(REMAT_ACT_RESTORE, n - 2, (int)(n - 2)),
                              act(REMAT_ACT_REVERSE, n - 2, -1),
                              act(REMAT_ACT_FREE, n - 2, (int)(n - 2))},
             n - 1, -1, -1);
    push1(&l, REMAT_ACT_DONE, n, -1);
    assert_int_equal(l.len, n >= 2 ? 6 : (n == 1 ? 4 : 2));
    return l;
}

static void test_adjoint_runs_per_step_shape(void **state)
{
    (void)state;
    remat_schedule_spec spec = {.kind = REMAT_SCHED_PER_STEP};
    remat_action_run buf[6];
    for (size_t j = 0; j < GRID_N; j++) {
        run_list l = per_step_runs(buf, grid_n[j]);
        check_runs_equal(&spec, grid_n[j], &l);
    }
}

/* With at least n-1 snapshots Revolve's splits are all 1: binomial is
 * per-step, and hands out per-step's runs, the whole forward descent as one
 * [TAKESHOT, ADVANCE] run and the whole reversal as one
 * [RESTORE, REVERSE, FREE] run. */
static void test_adjoint_runs_binomial_as_per_step(void **state)
{
    (void)state;
    remat_action_run buf[6];
    for (size_t j = 0; j < GRID_N; j++) {
        int64_t n = grid_n[j];
        run_list l = per_step_runs(buf, n);
        remat_schedule_spec exact = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = n > 1 ? n - 1 : 1};
        check_runs_equal(&exact, n, &l);
        remat_schedule_spec more = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = n + 5};
        check_runs_equal(&more, n, &l);
    }
}

/* periodic:k and two-level: the runs remat/schedule.h lists, and in
 * particular every TAPE run (and every REVERSE run) covers a whole segment:
 * count k, the last segment's n - (m-1)k. */
static void check_periodic_shape(const remat_schedule_spec *spec, int64_t n, int64_t k)
{
    int64_t m = (n + k - 1) / k, last = m > 0 ? (m - 1) * k : 0;
    run_list l = {.cap = 4 * m + 8};
    l.run = xcalloc((size_t)l.cap, sizeof *l.run);
    if (m >= 2)
        push(&l, 2, (remat_action[]){act(REMAT_ACT_TAKESHOT, 0, 0), act(REMAT_ACT_ADVANCE, k, -1)},
             m - 1, k, 1);
    if (n >= 1)
        push(&l, 1, (remat_action[]){act(REMAT_ACT_TAPE, last, -1)}, n - last, 1, 0);
    push1(&l, REMAT_ACT_END_FORWARD, n, -1);
    if (n >= 1)
        push(&l, 1, (remat_action[]){act(REMAT_ACT_REVERSE, n - 1, -1)}, n - last, -1, 0);
    for (int64_t j = m - 2; j >= 0; j--) {
        int64_t a = j * k;
        push1(&l, REMAT_ACT_RESTORE, a, (int)j);
        push(&l, 1, (remat_action[]){act(REMAT_ACT_TAPE, a, -1)}, k, 1, 0);
        push1(&l, REMAT_ACT_FREE, a, (int)j);
        push(&l, 1, (remat_action[]){act(REMAT_ACT_REVERSE, a + k - 1, -1)}, k, -1, 0);
    }
    push1(&l, REMAT_ACT_DONE, n, -1);
    check_runs_equal(spec, n, &l);
    free(l.run);

    /* The same, said directly: taped steps come in whole segments. */
    remat_schedule *s;
    assert_ok(remat_schedule_new(spec, n, &s));
    int64_t tape_runs = 0, taped = 0;
    for (;;) {
        remat_action_run r;
        remat_schedule_next_run(s, &r);
        if (r.pat[0].kind == REMAT_ACT_DONE)
            break;
        if (r.pat[0].kind != REMAT_ACT_TAPE)
            continue;
        int64_t seg = r.pat[0].step / k, len = seg == m - 1 ? n - last : k;
        assert_int_equal(r.n, 1);
        assert_int_equal(r.pat[0].step, seg * k);
        assert_int_equal(r.count, len);
        tape_runs++;
        taped += r.count;
    }
    assert_int_equal(tape_runs, m);
    assert_int_equal(taped, n);
    remat_schedule_free(s);
}

static void test_adjoint_runs_periodic_shape(void **state)
{
    (void)state;
    const int64_t periods[] = {1, 3, 32};
    for (size_t j = 0; j < GRID_N; j++) {
        int64_t n = grid_n[j];
        for (size_t p = 0; p < sizeof periods / sizeof periods[0]; p++) {
            remat_schedule_spec spec = {.kind = REMAT_SCHED_PERIODIC, .period = periods[p]};
            check_periodic_shape(&spec, n, periods[p]);
        }
        int64_t k = 1;
        while (k * k < n)
            k++;
        remat_schedule_spec two = {.kind = REMAT_SCHED_TWO_LEVEL};
        check_periodic_shape(&two, n, k);
        remat_schedule_spec two5 = {.kind = REMAT_SCHED_TWO_LEVEL, .period = 5};
        check_periodic_shape(&two5, n, 5);
    }
}

int main(void)
{
    rng_seed(0x9e3779b97f4a7c15ull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adjoint_runs_expand_to_next_every_kind),
        cmocka_unit_test(test_adjoint_runs_zero_length_every_kind),
        cmocka_unit_test(test_adjoint_runs_expand_binomial_online_grid),
        cmocka_unit_test(test_adjoint_runs_binomial_online_fewer_runs),
        cmocka_unit_test(test_adjoint_runs_online_single_until_revealed),
        cmocka_unit_test(test_adjoint_runs_mixed_with_next),
        cmocka_unit_test(test_adjoint_runs_rest_of_a_partly_taken_run),
        cmocka_unit_test(test_adjoint_runs_store_all_shape),
        cmocka_unit_test(test_adjoint_runs_per_step_shape),
        cmocka_unit_test(test_adjoint_runs_binomial_as_per_step),
        cmocka_unit_test(test_adjoint_runs_periodic_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
