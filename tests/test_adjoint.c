/*
 * test_adjoint.c — checkpoint schedules, run against a simulated scan runtime.
 *
 * The simulated runtime executes a schedule's actions on integer carries
 * (carry_c is just c) and checks every rule of remat/schedule.h: ADVANCE from a
 * valid current carry, RESTORE gives back what TAKESHOT stored, TAPE only at
 * the current carry, the forward phase evaluates every step once in order and
 * ends at c == n, every step is reversed exactly once from n-1 down to 0, DONE
 * leaves no slot or tape behind. Its measured counts must equal
 * remat_schedule_predict() exactly, and binomial/online must hit the
 * Griewank–Walther optimum n + F(n, s).
 */
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint/schedule_impl.h"
#include "remat/schedule.h"

/* ---- simulated runtime ---------------------------------------------------- */

typedef struct {
    int64_t evals, peak_snapshots, peak_tapes, actions;
    /* two-tier: peak_snapshots counts RAM slots, these the slow tier's */
    int64_t peak_disk, disk_writes, disk_reads;
} measured;

typedef enum { REVEAL_LATE, REVEAL_EARLY } reveal_mode;

/* Runs spec over n steps; fails the test on any broken rule. */
static measured simulate(const remat_schedule_spec *spec, int64_t n, reveal_mode reveal)
{
    remat_schedule *s = NULL;
    bool online = spec->kind == REMAT_SCHED_ONLINE;
    assert_int_equal(remat_schedule_new(spec, online ? -1 : n, &s), REMAT_OK);
    int64_t max_slots = remat_schedule_max_slots(s);
    assert_true(max_slots >= 0);
    if (online)
        assert_int_equal(max_slots, spec->snapshots);

    int64_t nslot_alloc = max_slots > 0 ? max_slots : 1;
    int64_t *slot = malloc((size_t)nslot_alloc * sizeof *slot);
    bool *taped = calloc((size_t)(n > 0 ? n : 1), sizeof *taped);
    int64_t *tape_stack = calloc((size_t)(n > 0 ? n : 1), sizeof *tape_stack);
    assert_non_null(slot);
    assert_non_null(taped);
    assert_non_null(tape_stack);
    for (int64_t i = 0; i < nslot_alloc; i++)
        slot[i] = -1;

    measured m = {0};
    int64_t live_slots = 0, live_tapes = 0, live_disk = 0;
    /* slots from here on are the slow tier's (two-tier) */
    const int64_t slow0 = spec->kind == REMAT_SCHED_TWO_TIER ? spec->snapshots : INT64_MAX;
    int64_t c = 0;          /* current carry, -1 when undefined */
    int64_t forward = 0;    /* steps evaluated in the forward phase, in order */
    int64_t next_rev = n - 1;
    bool ended = false, revealed = false;
    int64_t limit = 64 * (n + 4) * (n + 4) + 1000; /* F(n,1) is quadratic */

    for (;;) {
        /* late: just before the next() call made at carry n-1 */
        if (online && !revealed && (reveal == REVEAL_EARLY || n == 0 || c == n - 1)) {
            remat_schedule_set_length(s, n);
            revealed = true;
        }
        remat_action a;
        remat_schedule_next(s, &a);
        assert_true(++m.actions < limit);
        switch (a.kind) {
        case REMAT_ACT_ADVANCE:
            assert_true(c >= 0);
            assert_true(a.step > c && a.step <= n);
            if (!ended) {
                assert_int_equal(c, forward); /* forward phase: in order, once */
                forward = a.step;
                if (online) /* step n-1 must be taped, and n is known by then */
                    assert_true(a.step <= n - 1);
            } else {
                assert_true(a.step <= next_rev); /* never past a reversed step */
            }
            m.evals += a.step - c;
            c = a.step;
            break;
        case REMAT_ACT_TAKESHOT:
            assert_true(a.slot >= 0 && a.slot < max_slots);
            assert_int_equal(slot[a.slot], -1);
            assert_true(c >= 0);
            assert_int_equal(a.step, c);
            slot[a.slot] = c;
            live_slots++;
            if (a.slot >= slow0) {
                m.disk_writes++;
                if (++live_disk > m.peak_disk)
                    m.peak_disk = live_disk;
            }
            if (live_slots - live_disk > m.peak_snapshots)
                m.peak_snapshots = live_slots - live_disk;
            break;
        case REMAT_ACT_RESTORE:
            assert_true(a.slot >= 0 && a.slot < max_slots);
            assert_int_equal(slot[a.slot], a.step);
            c = a.step;
            m.disk_reads += a.slot >= slow0;
            break;
        case REMAT_ACT_FREE:
            assert_true(a.slot >= 0 && a.slot < max_slots);
            assert_int_equal(slot[a.slot], a.step);
            slot[a.slot] = -1;
            live_slots--;
            live_disk -= a.slot >= slow0;
            break;
        case REMAT_ACT_TAPE:
            assert_true(a.step >= 0 && a.step < n);
            assert_int_equal(a.step, c);
            assert_false(taped[a.step]);
            if (!ended) {
                assert_int_equal(a.step, forward);
                forward++;
            } else {
                assert_true(a.step <= next_rev);
            }
            taped[a.step] = true;
            tape_stack[live_tapes] = a.step;
            if (++live_tapes > m.peak_tapes)
                m.peak_tapes = live_tapes;
            m.evals++;
            c = a.step + 1;
            break;
        case REMAT_ACT_END_FORWARD:
            assert_false(ended);
            assert_int_equal(c, n);
            assert_int_equal(forward, n);
            ended = true;
            break;
        case REMAT_ACT_REVERSE:
            assert_true(ended);
            assert_int_equal(a.step, next_rev);
            if (taped[a.step]) { /* kept tapes are used last-in first-out */
                assert_int_equal(tape_stack[live_tapes - 1], a.step);
                taped[a.step] = false;
                live_tapes--;
            } else { /* evaluated with recording and reversed at once */
                assert_int_equal(c, a.step);
                m.evals++;
                if (live_tapes + 1 > m.peak_tapes)
                    m.peak_tapes = live_tapes + 1;
            }
            next_rev--;
            c = -1;
            break;
        case REMAT_ACT_DONE:
            assert_true(ended);
            assert_int_equal(next_rev, -1);
            assert_int_equal(live_slots, 0);
            assert_int_equal(live_tapes, 0);
            remat_schedule_next(s, &a); /* DONE stays DONE */
            assert_int_equal(a.kind, REMAT_ACT_DONE);
            free(slot);
            free(taped);
            free(tape_stack);
            remat_schedule_free(s);
            return m;
        default: fail_msg("unknown action kind %d", (int)a.kind);
        }
        assert_true(live_slots <= max_slots);
    }
}

/* Simulates and holds the measured counts to predict(). */
static measured check_schedule(const remat_schedule_spec *spec, int64_t n)
{
    measured m = simulate(spec, n, REVEAL_LATE);
    remat_schedule_cost cost;
    assert_int_equal(remat_schedule_predict(spec, n, &cost), REMAT_OK);
    char name[64];
    remat_schedule_format(spec, name, sizeof name);
    if (m.evals != cost.forward_evals || m.peak_snapshots != cost.peak_snapshots ||
        m.peak_tapes != cost.peak_tapes)
        fail_msg("%s n=%lld: measured evals %lld snaps %lld tapes %lld, predicted %lld %lld %lld",
                 name, (long long)n, (long long)m.evals, (long long)m.peak_snapshots,
                 (long long)m.peak_tapes, (long long)cost.forward_evals,
                 (long long)cost.peak_snapshots, (long long)cost.peak_tapes);
    if (m.peak_disk != cost.peak_disk_snapshots || m.disk_writes != cost.disk_writes ||
        m.disk_reads != cost.disk_reads)
        fail_msg("%s n=%lld: measured slow slots %lld writes %lld reads %lld, predicted %lld %lld %lld", name,
                 (long long)n, (long long)m.peak_disk, (long long)m.disk_writes, (long long)m.disk_reads,
                 (long long)cost.peak_disk_snapshots, (long long)cost.disk_writes, (long long)cost.disk_reads);
    return m;
}

/* (t+1) n - (t-1)(s+1) - 1, the bound sched_online.c proves (n >= 2). */
static int64_t online_bound(int64_t n, int64_t s)
{
    int64_t t = 0, beta = 1; /* beta = C(s+t, t) */
    while (beta < n) {
        t++;
        beta = beta * (s + t) / t;
    }
    return (t + 1) * n - (t - 1) * (s + 1) - 1;
}

static const int64_t grid_n[] = {0, 1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 31, 32, 37,
                                 64, 97, 128, 251, 256, 509, 512, 1000};
#define GRID_N (sizeof grid_n / sizeof grid_n[0])

/* ---- binomial -------------------------------------------------------------- */

static void test_adjoint_binomial_optimum_vectors(void **state)
{
    (void)state;
    static const int64_t v[][3] = {{5, 2, 11},      {10, 3, 25},     {20, 3, 65},
                                   {100, 3, 590},   {100, 10, 322},  {1000, 5, 7284},
                                   {4096, 90, 12196}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_int_equal(remat_binomial_optimum(v[i][0], v[i][1]), v[i][2]);
        remat_schedule_spec spec = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = v[i][1]};
        measured m = check_schedule(&spec, v[i][0]);
        assert_int_equal(m.evals, v[i][2]);
    }
    assert_int_equal(remat_binomial_optimum(0, 3), 0);
    assert_int_equal(remat_binomial_optimum(1, 1), 1);
    assert_int_equal(remat_binomial_optimum(2, 1), 3);
    assert_int_equal(remat_binomial_optimum(7, 0), -1);
}

/* The closed form against the Revolve recursion it solves:
 * F(l, s) = min_j j + F(l-j, s-1) + F(j, s), F(1, s) = 0, s counting the
 * snapshot of the range's first carry. */
static void test_adjoint_binomial_formula_matches_recursion(void **state)
{
    (void)state;
    enum { L = 80, S = 9 };
    static int64_t F[L + 1][S + 1];
    const int64_t inf = INT64_MAX / 4;
    for (int s = 0; s <= S; s++) {
        F[0][s] = 0;
        F[1][s] = 0;
        for (int l = 2; l <= L; l++) {
            F[l][s] = inf;
            if (s == 0)
                continue;
            for (int j = 1; j < l; j++) {
                int64_t v = j + F[l - j][s - 1] + F[j][s];
                if (v < F[l][s])
                    F[l][s] = v;
            }
        }
    }
    for (int s = 1; s <= S; s++)
        for (int l = 1; l <= L; l++)
            assert_int_equal(remat_binomial_optimum(l, s), l + F[l][s]);
}

static void test_adjoint_binomial_grid(void **state)
{
    (void)state;
    int64_t snaps[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 90};
    for (size_t i = 0; i < GRID_N; i++) {
        for (size_t j = 0; j < sizeof snaps / sizeof snaps[0]; j++) {
            int64_t n = grid_n[i], s = snaps[j];
            if (s <= 2 && n > 512)
                continue; /* quadratic-ish; covered by the vectors */
            remat_schedule_spec spec = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = s};
            measured m = check_schedule(&spec, n);
            assert_int_equal(m.evals, remat_binomial_optimum(n, s));
            assert_int_equal(m.peak_snapshots, n <= 1 ? 0 : (s < n - 1 ? s : n - 1));
            assert_int_equal(m.peak_tapes, n > 0 ? 1 : 0);
        }
    }
}

/* ---- simple schedules ------------------------------------------------------ */

static void test_adjoint_store_all_and_per_step(void **state)
{
    (void)state;
    for (size_t i = 0; i < GRID_N; i++) {
        int64_t n = grid_n[i];
        remat_schedule_spec all = {.kind = REMAT_SCHED_STORE_ALL};
        measured m = check_schedule(&all, n);
        assert_int_equal(m.evals, n);
        assert_int_equal(m.peak_snapshots, 0);
        assert_int_equal(m.peak_tapes, n);

        remat_schedule_spec per = {.kind = REMAT_SCHED_PER_STEP};
        m = check_schedule(&per, n);
        assert_int_equal(m.evals, n > 0 ? 2 * n - 1 : 0);
        assert_int_equal(m.peak_snapshots, n > 0 ? n - 1 : 0);
        assert_int_equal(m.peak_tapes, n > 0 ? 1 : 0);
    }
}

static void test_adjoint_periodic(void **state)
{
    (void)state;
    int64_t periods[] = {1, 2, 3, 5, 8, 32, 100, 1000, 5000};
    for (size_t i = 0; i < GRID_N; i++) {
        for (size_t j = 0; j < sizeof periods / sizeof periods[0]; j++) {
            int64_t n = grid_n[i], k = periods[j];
            remat_schedule_spec spec = {.kind = REMAT_SCHED_PERIODIC, .period = k};
            measured m = check_schedule(&spec, n);
            int64_t segs = (n + k - 1) / k;
            assert_int_equal(m.evals, n == 0 ? 0 : n + (segs - 1) * k);
            assert_int_equal(m.peak_snapshots, segs > 0 ? segs - 1 : 0);
            assert_int_equal(m.peak_tapes, k < n ? k : n);
        }
    }
    remat_schedule_spec spec = {.kind = REMAT_SCHED_PERIODIC, .period = 32};
    assert_int_equal(check_schedule(&spec, 1000).evals, 1000 + 31 * 32);
}

static void test_adjoint_two_level(void **state)
{
    (void)state;
    for (size_t i = 0; i < GRID_N; i++) {
        int64_t n = grid_n[i];
        int64_t k = 1;
        while (k * k < n)
            k++;
        remat_schedule_spec two = {.kind = REMAT_SCHED_TWO_LEVEL};
        remat_schedule_spec per = {.kind = REMAT_SCHED_PERIODIC, .period = k};
        measured a = check_schedule(&two, n), b = check_schedule(&per, n);
        assert_int_equal(a.evals, b.evals);
        assert_int_equal(a.peak_snapshots, b.peak_snapshots);
        assert_int_equal(a.peak_tapes, b.peak_tapes);
        remat_schedule_spec fixed = {.kind = REMAT_SCHED_TWO_LEVEL, .period = 7};
        remat_schedule_spec per7 = {.kind = REMAT_SCHED_PERIODIC, .period = 7};
        assert_int_equal(check_schedule(&fixed, n).evals, check_schedule(&per7, n).evals);
    }
}

static void test_adjoint_zero_length_every_kind(void **state)
{
    (void)state;
    remat_schedule_spec specs[] = {
        {.kind = REMAT_SCHED_STORE_ALL},
        {.kind = REMAT_SCHED_PER_STEP},
        {.kind = REMAT_SCHED_PERIODIC, .period = 4},
        {.kind = REMAT_SCHED_TWO_LEVEL},
        {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 3},
        {.kind = REMAT_SCHED_ONLINE, .snapshots = 3},
        {.kind = REMAT_SCHED_TWO_TIER, .snapshots = 1, .disk_snapshots = 2, .disk_write = 1, .disk_read = 1},
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        measured m = check_schedule(&specs[i], 0);
        assert_int_equal(m.evals, 0);
        assert_int_equal(m.actions, 2); /* END_FORWARD, DONE */
    }
}

/* ---- online ---------------------------------------------------------------- */

/* Optimal wherever Stumm & Walther's online optimum exists: n <= (s+1)(s+2)/2. */
static void test_adjoint_online_optimal_up_to_beta2(void **state)
{
    (void)state;
    for (int64_t s = 1; s <= 12; s++) {
        int64_t top = (s + 1) * (s + 2) / 2;
        remat_schedule_spec spec = {.kind = REMAT_SCHED_ONLINE, .snapshots = s};
        for (int64_t n = 0; n <= top; n++) {
            measured m = check_schedule(&spec, n);
            if (m.evals != remat_binomial_optimum(n, s))
                fail_msg("online:%lld n=%lld: %lld evaluations, optimum %lld", (long long)s,
                         (long long)n, (long long)m.evals,
                         (long long)remat_binomial_optimum(n, s));
            assert_true(m.peak_snapshots <= s);
        }
    }
}

/* Beyond that: correct, never more than s snapshots, within the stated bound. */
static void test_adjoint_online_bound_long(void **state)
{
    (void)state;
    int64_t snaps[] = {1, 2, 3, 5, 10};
    for (size_t j = 0; j < sizeof snaps / sizeof snaps[0]; j++) {
        int64_t s = snaps[j];
        remat_schedule_spec spec = {.kind = REMAT_SCHED_ONLINE, .snapshots = s};
        for (int64_t n = 2; n <= 5000; n++) {
            remat_schedule_cost cost;
            assert_int_equal(remat_schedule_predict(&spec, n, &cost), REMAT_OK);
            int64_t opt = remat_binomial_optimum(n, s);
            if (cost.forward_evals < opt || cost.forward_evals > online_bound(n, s))
                fail_msg("online:%lld n=%lld: %lld evaluations, optimum %lld, bound %lld",
                         (long long)s, (long long)n, (long long)cost.forward_evals,
                         (long long)opt, (long long)online_bound(n, s));
            assert_true(cost.peak_snapshots <= s);
        }
        /* full runtime checks on a spread of lengths (s = 1 is quadratic) */
        int64_t stride = s == 1 ? 997 : (s == 2 ? 251 : 37);
        for (int64_t n = 2; n <= 5000; n += stride)
            check_schedule(&spec, n);
        check_schedule(&spec, 5000);
    }
}

/* The generator acts on the length only when the forward phase reaches it, so
 * revealing it up front changes nothing. */
static void test_adjoint_online_reveal_time_irrelevant(void **state)
{
    (void)state;
    for (int64_t s = 1; s <= 6; s++) {
        remat_schedule_spec spec = {.kind = REMAT_SCHED_ONLINE, .snapshots = s};
        for (int64_t n = 0; n <= 120; n += 7) {
            measured late = simulate(&spec, n, REVEAL_LATE);
            measured early = simulate(&spec, n, REVEAL_EARLY);
            assert_int_equal(late.evals, early.evals);
            assert_int_equal(late.actions, early.actions);
            assert_int_equal(late.peak_snapshots, early.peak_snapshots);
        }
    }
}

/* ---- budgets ----------------------------------------------------------------- */

static int64_t bytes_of(const remat_schedule_spec *spec, int64_t n, int64_t carry, int64_t tape,
                        int64_t *evals)
{
    remat_schedule_cost cost;
    assert_int_equal(remat_schedule_predict(spec, n, &cost), REMAT_OK);
    *evals = cost.forward_evals;
    return cost.peak_snapshots * carry + cost.peak_tapes * tape;
}

/* for_budget against every store-all / per-step / periodic / binomial spec. */
static void check_budget_choice(int64_t budget, int64_t n, int64_t carry, int64_t tape)
{
    remat_schedule_spec got;
    assert_int_equal(remat_schedule_for_budget(budget, n, carry, tape, &got), REMAT_OK);
    int64_t got_evals, got_bytes = bytes_of(&got, n, carry, tape, &got_evals);
    assert_true(got_bytes <= budget);
    int64_t best = INT64_MAX, e;
    remat_schedule_spec c = {.kind = REMAT_SCHED_STORE_ALL};
    if (bytes_of(&c, n, carry, tape, &e) <= budget && e < best)
        best = e;
    c = (remat_schedule_spec){.kind = REMAT_SCHED_PER_STEP};
    if (bytes_of(&c, n, carry, tape, &e) <= budget && e < best)
        best = e;
    for (int64_t k = 1; k <= n + 1; k++) {
        c = (remat_schedule_spec){.kind = REMAT_SCHED_PERIODIC, .period = k};
        if (bytes_of(&c, n, carry, tape, &e) <= budget && e < best)
            best = e;
        c = (remat_schedule_spec){.kind = REMAT_SCHED_BINOMIAL, .snapshots = k};
        if (bytes_of(&c, n, carry, tape, &e) <= budget && e < best)
            best = e;
    }
    assert_int_equal(got_evals, best);
}

static void test_adjoint_for_budget_picks_fewest_evals(void **state)
{
    (void)state;
    remat_schedule_spec spec;
    /* room for every tape: store-all */
    assert_int_equal(remat_schedule_for_budget(1000 * 64, 1000, 16, 64, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_STORE_ALL);
    /* tapes as big as carries, room for 11 of them: binomial:10 */
    assert_int_equal(remat_schedule_for_budget(11 * 100, 1000, 100, 100, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_BINOMIAL);
    assert_int_equal(spec.snapshots, 10);
    /* cheap tapes next to big carries: periodic:40 (1960 evals, 42400 bytes; periodic:48
     * ties on evaluations with more memory) beats binomial:490 (2508 evals) */
    assert_int_equal(remat_schedule_for_budget(50000, 1000, 100, 1000, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_PERIODIC);
    assert_int_equal(spec.period, 40);
    assert_int_equal(remat_schedule_for_budget(0, 0, 8, 8, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_STORE_ALL);

    int64_t ns[] = {1, 2, 3, 10, 57, 200};
    int64_t shapes[][2] = {{100, 100}, {100, 1000}, {1000, 100}, {1, 0}, {0, 5}};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < sizeof shapes / sizeof shapes[0]; j++)
            for (int64_t budget = 0; budget <= 60000; budget += 997) {
                remat_schedule_spec got;
                if (remat_schedule_for_budget(budget, ns[i], shapes[j][0], shapes[j][1], &got) ==
                    REMAT_OK)
                    check_budget_choice(budget, ns[i], shapes[j][0], shapes[j][1]);
            }
}

static void test_adjoint_for_budget_too_small(void **state)
{
    (void)state;
    remat_schedule_spec spec;
    /* least: binomial:1 = one carry + one tape = 1100 bytes */
    assert_int_equal(remat_schedule_for_budget(1099, 1000, 100, 1000, &spec), REMAT_ERR_BUDGET);
    assert_non_null(strstr(remat_last_error(), "1100 bytes"));
    assert_int_equal(remat_schedule_for_budget(1100, 1000, 100, 1000, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_BINOMIAL);
    assert_int_equal(spec.snapshots, 1);
    /* big carries, tiny tapes, few steps: store-all is the least (5 * 10) */
    assert_int_equal(remat_schedule_for_budget(49, 5, 1000, 10, &spec), REMAT_ERR_BUDGET);
    assert_non_null(strstr(remat_last_error(), "50 bytes"));
    assert_non_null(strstr(remat_last_error(), "store-all"));
    assert_int_equal(remat_schedule_for_budget(-1, 5, 1, 1, &spec), REMAT_ERR_ARG);
    assert_int_equal(remat_schedule_for_budget(10, 5, 1, 1, NULL), REMAT_ERR_NULL);
}

/* ---- text form and argument errors ---------------------------------------- */

static void test_adjoint_parse_format_round_trip(void **state)
{
    (void)state;
    const char *texts[] = {"store-all", "per-step", "periodic:32", "two-level",
                           "two-level:9", "binomial:10", "online:4", "binomial:90"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        remat_schedule_spec spec;
        assert_int_equal(remat_schedule_parse(texts[i], &spec), REMAT_OK);
        char buf[64];
        remat_schedule_format(&spec, buf, sizeof buf);
        assert_string_equal(buf, texts[i]);
    }
    remat_schedule_spec spec;
    assert_int_equal(remat_schedule_parse("binomial:10", &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_BINOMIAL);
    assert_int_equal(spec.snapshots, 10);
    assert_int_equal(remat_schedule_parse("two-level", &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_TWO_LEVEL);
    assert_int_equal(spec.period, 0);
    char small[5];
    remat_schedule_format(&spec, small, sizeof small); /* truncates, terminated */
    assert_string_equal(small, "two-");
}

static void expect_parse_error(const char *text, remat_status want, const char *msg)
{
    remat_schedule_spec spec = {.kind = REMAT_SCHED_PER_STEP, .period = 77};
    assert_int_equal(remat_schedule_parse(text, &spec), want);
    if (!strstr(remat_last_error(), msg))
        fail_msg("parse '%s': message '%s' lacks '%s'", text, remat_last_error(), msg);
    assert_int_equal(spec.period, 77); /* nothing half-written */
}

static void test_adjoint_parse_errors(void **state)
{
    (void)state;
    expect_parse_error("foo", REMAT_ERR_PARSE,
                       "unknown schedule 'foo' (expected store-all, per-step, periodic:K, ");
    expect_parse_error("binomial:0", REMAT_ERR_ARG, "binomial:0: snapshots must be >= 1");
    expect_parse_error("online:0", REMAT_ERR_ARG, "online:0: snapshots must be >= 1");
    expect_parse_error("periodic:0", REMAT_ERR_ARG, "periodic:0: period must be >= 1");
    expect_parse_error("two-level:0", REMAT_ERR_ARG, "two-level:0: period must be >= 1");
    expect_parse_error("periodic", REMAT_ERR_PARSE, "missing period");
    expect_parse_error("binomial", REMAT_ERR_PARSE, "missing snapshots");
    expect_parse_error("binomial:x3", REMAT_ERR_PARSE, "'x3' is not a whole number");
    expect_parse_error("binomial:-3", REMAT_ERR_PARSE, "'-3' is not a whole number");
    expect_parse_error("online:", REMAT_ERR_PARSE, "'' is not a whole number");
    expect_parse_error("binomial:99999999999999999999", REMAT_ERR_PARSE, "not a whole number");
    expect_parse_error("store-all:3", REMAT_ERR_PARSE, "store-all takes no parameter");
    expect_parse_error("Binomial:3", REMAT_ERR_PARSE, "unknown schedule 'Binomial:3'");
    expect_parse_error("", REMAT_ERR_PARSE, "unknown schedule ''");
}

/* ---- two tiers: the recursion against an exhaustive search ----------------- */

/* The least cost (evaluations + W disk writes + R disk reads) of reversing n
 * steps with at most S snapshots in RAM and D on disk at once, over every
 * sequence of one-step advances, snapshots into either tier, restores, frees
 * and reversals: Dijkstra over (current carry, RAM set, disk set, steps
 * left). Costs are whole quarters (W, R multiples of 0.25), so sums are
 * exact. Knows nothing of the recursion it checks. */
typedef struct {
    int64_t cost; /* quarters */
    int64_t state;
} bf_item;

static void bf_push(bf_item *h, int64_t *nh, bf_item it)
{
    int64_t i = (*nh)++;
    while (i > 0 && h[(i - 1) / 2].cost > it.cost) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = it;
}

static bf_item bf_pop(bf_item *h, int64_t *nh)
{
    bf_item top = h[0], last = h[--(*nh)];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *nh)
            break;
        if (c + 1 < *nh && h[c + 1].cost < h[c].cost)
            c++;
        if (h[c].cost >= last.cost)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*nh > 0)
        h[i] = last;
    return top;
}

static double brute_force_two_tier(int n, int S, int D, double W, double R)
{
    const int64_t w = (int64_t)(W * 4), r = (int64_t)(R * 4), sets = (int64_t)1 << n;
    assert_true(w == W * 4 && r == R * 4);
    const int64_t n_states = (int64_t)(n + 1) * sets * sets * (n + 1);
#define BF_STATE(c, ram, disk, left) ((((int64_t)(left) * sets + (disk)) * sets + (ram)) * (n + 1) + ((c) + 1))
    int64_t *dist = malloc(sizeof *dist * (size_t)n_states);
    int64_t cap = 64 * n_states, nh = 0;
    bf_item *h = malloc(sizeof *h * (size_t)cap);
    assert_non_null(dist);
    assert_non_null(h);
    for (int64_t i = 0; i < n_states; i++)
        dist[i] = INT64_MAX;
    dist[BF_STATE(0, 0, 0, n)] = 0;
    bf_push(h, &nh, (bf_item){0, BF_STATE(0, 0, 0, n)});
    int64_t best = -1;
    while (nh > 0) {
        bf_item it = bf_pop(h, &nh);
        if (it.cost > dist[it.state])
            continue;
        int64_t x = it.state;
        const int c = (int)(x % (n + 1)) - 1;
        x /= n + 1;
        const int64_t ram = x % sets;
        x /= sets;
        const int64_t disk = x % sets;
        const int left = (int)(x / sets);
        if (left == 0) {
            best = it.cost;
            break;
        }
        int64_t nxt[4 + 4 * 8], add[4 + 4 * 8];
        int k = 0;
#define BF_EDGE(st, q) (nxt[k] = (st), add[k] = (q), k++)
        if (c >= 0 && c + 1 <= left - 1)
            BF_EDGE(BF_STATE(c + 1, ram, disk, left), 4); /* advance one step */
        if (c >= 0 && c == left - 1)
            BF_EDGE(BF_STATE(-1, ram, disk, left - 1), 4); /* reverse it (recording) */
        if (c >= 0 && !(ram >> c & 1) && __builtin_popcountll((unsigned long long)ram) < S)
            BF_EDGE(BF_STATE(c, ram | (int64_t)1 << c, disk, left), 0);
        if (c >= 0 && !(disk >> c & 1) && __builtin_popcountll((unsigned long long)disk) < D)
            BF_EDGE(BF_STATE(c, ram, disk | (int64_t)1 << c, left), w);
        for (int i = 0; i < n; i++) {
            if (ram >> i & 1) {
                BF_EDGE(BF_STATE(i, ram, disk, left), 0);                      /* restore */
                BF_EDGE(BF_STATE(c, ram & ~((int64_t)1 << i), disk, left), 0); /* free */
            }
            if (disk >> i & 1) {
                BF_EDGE(BF_STATE(i, ram, disk, left), r);
                BF_EDGE(BF_STATE(c, ram, disk & ~((int64_t)1 << i), left), 0);
            }
        }
        for (int e = 0; e < k; e++)
            if (it.cost + add[e] < dist[nxt[e]]) {
                dist[nxt[e]] = it.cost + add[e];
                assert_true(nh < cap);
                bf_push(h, &nh, (bf_item){dist[nxt[e]], nxt[e]});
            }
#undef BF_EDGE
    }
#undef BF_STATE
    free(h);
    free(dist);
    return best < 0 ? -1 : (double)best / 4;
}

static remat_schedule_spec two_tier(int64_t S, int64_t D, double W, double R)
{
    return (remat_schedule_spec){.kind = REMAT_SCHED_TWO_TIER, .snapshots = S, .disk_snapshots = D,
                                 .disk_write = W, .disk_read = R};
}

/* Small cases: the recursion's optimum equals the exhaustive search's, and
 * the generator, run on the simulated runtime, costs exactly that and its
 * counts equal predict(). */
static void test_adjoint_two_tier_matches_brute_force(void **state)
{
    (void)state;
    const double costs[][2] = {{0, 0}, {0.5, 0.5}, {1, 2}, {2.5, 0.25}, {0.25, 3}, {4, 4}};
    int checked = 0, used_disk = 0, beat_ram = 0;
    for (int n = 1; n <= 6; n++)
        for (int S = 0; S <= 2; S++)
            for (int D = 0; D <= 2; D++)
                for (size_t ci = 0; ci < sizeof costs / sizeof *costs; ci++) {
                    if (S + D < 1 || (D == 0 && ci > 0))
                        continue;
                    const remat_schedule_spec spec = two_tier(S, D, costs[ci][0], costs[ci][1]);
                    const double bf = brute_force_two_tier(n, S, D, costs[ci][0], costs[ci][1]);
                    const double dp = rmi_sched_two_tier_optimum(&spec, n);
                    if (dp != bf)
                        fail_msg("two-tier:%d:%d:%g:%g n=%d: recursion %g, exhaustive search %g", S, D, costs[ci][0],
                                 costs[ci][1], n, dp, bf);
                    if (bf < 0)
                        continue;
                    measured m = check_schedule(&spec, n);
                    const double got = (double)m.evals + costs[ci][0] * (double)m.disk_writes +
                                       costs[ci][1] * (double)m.disk_reads;
                    if (got != bf)
                        fail_msg("two-tier:%d:%d:%g:%g n=%d: the schedule costs %g, the optimum is %g", S, D,
                                 costs[ci][0], costs[ci][1], n, got, bf);
                    assert_true(m.peak_snapshots <= S && m.peak_disk <= D);
                    used_disk += m.disk_writes > 0;
                    if (S >= 1 && D >= 1 && n >= 3 && got < (double)remat_binomial_optimum(n, S))
                        beat_ram++;
                    checked++;
                }
    /* the search space was exercised: schedules that write to disk, and ones
     * the slow tier makes cheaper than RAM alone */
    if (checked < 150 || used_disk < 20 || beat_ram < 10)
        fail_msg("checked %d cases, %d wrote to disk, %d beat RAM alone", checked, used_disk, beat_ram);
}

/* Without a slow tier it is Revolve; with one, longer scans keep predict()
 * exact, and the slow tier is used where it pays and left alone where it
 * does not (writing costs more than recomputing everything). */
static void test_adjoint_two_tier_longer(void **state)
{
    (void)state;
    for (int64_t n = 1; n <= 40; n += 3)
        for (int64_t S = 1; S <= 4; S++) {
            const remat_schedule_spec ram_only = two_tier(S, 0, 1, 1);
            measured m = check_schedule(&ram_only, n);
            assert_int_equal(m.evals, remat_binomial_optimum(n, S));
            assert_int_equal(m.disk_writes, 0);
            const remat_schedule_spec cheap = two_tier(S, 8, 0.25, 0.25);
            m = check_schedule(&cheap, n);
            assert_true((double)m.evals + 0.25 * (double)(m.disk_writes + m.disk_reads) <=
                        (double)remat_binomial_optimum(n, S));
            if (n >= 10)
                assert_true(m.disk_writes > 0);
            const remat_schedule_spec dear = two_tier(S, 8, 1e6, 1e6);
            m = check_schedule(&dear, n);
            assert_int_equal(m.disk_writes, 0);
            assert_int_equal(m.evals, remat_binomial_optimum(n, S));
        }
    /* a long scan, every snapshot but carry 0 on a cheap disk */
    const remat_schedule_spec big = two_tier(1, 300, 0.25, 0.25);
    measured m = check_schedule(&big, 300);
    assert_int_equal(m.evals, 2 * 300 - 1); /* per-step through the slow tier */
    assert_true(m.peak_disk >= 200);
}

static void test_adjoint_two_tier_text_and_errors(void **state)
{
    (void)state;
    remat_schedule_spec spec;
    assert_int_equal(remat_schedule_parse("two-tier:4:16", &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_TWO_TIER);
    assert_int_equal(spec.snapshots, 4);
    assert_int_equal(spec.disk_snapshots, 16);
    assert_true(spec.disk_write == 1 && spec.disk_read == 1);
    assert_int_equal(remat_schedule_parse("two-tier:0:3:0.125:2.5", &spec), REMAT_OK);
    char buf[96];
    remat_schedule_format(&spec, buf, sizeof buf);
    assert_string_equal(buf, "two-tier:0:3:0.125:2.5");
    remat_schedule_spec back;
    assert_int_equal(remat_schedule_parse(buf, &back), REMAT_OK);
    assert_true(back.disk_write == 0.125 && back.disk_read == 2.5 && back.disk_snapshots == 3);
    expect_parse_error("two-tier", REMAT_ERR_PARSE, "missing slots");
    expect_parse_error("two-tier:4", REMAT_ERR_PARSE, "expected two-tier:S:D or two-tier:S:D:W:R");
    expect_parse_error("two-tier:4:2:1", REMAT_ERR_PARSE, "expected two-tier:S:D or two-tier:S:D:W:R");
    expect_parse_error("two-tier:4:x", REMAT_ERR_PARSE, "disk slots 'x' is not a whole number");
    expect_parse_error("two-tier:4:2:-1:1", REMAT_ERR_PARSE, "write cost '-1' is not a number >= 0");
    expect_parse_error("two-tier:4:2:1:nan", REMAT_ERR_PARSE, "read cost 'nan' is not a number >= 0");
    expect_parse_error("two-tier:0:0", REMAT_ERR_ARG, "at least one slot");
    remat_schedule *s = NULL;
    remat_schedule_spec bad = two_tier(-1, 2, 1, 1);
    assert_int_equal(remat_schedule_new(&bad, 5, &s), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "two-tier:-1:2: slots must be >= 0"));
    bad = two_tier(1, 2, 1, -0.5);
    assert_int_equal(remat_schedule_new(&bad, 5, &s), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "costs must be finite and >= 0"));
    const remat_schedule_spec one_disk = two_tier(0, 1, 1, 1); /* one slow slot reverses any length */
    assert_int_equal(remat_schedule_new(&one_disk, 5, &s), REMAT_OK);
    remat_schedule_free(s);
    const remat_schedule_spec huge = two_tier(1000, 100000, 1, 1);
    assert_int_equal(remat_schedule_new(&huge, 100000, &s), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "the exact schedule's table would have"));
    remat_schedule_cost cost;
    assert_int_equal(remat_schedule_predict(&huge, 100000, &cost), REMAT_ERR_ARG);
}

/* Budgets for two tiers: store-all when it fits in RAM; the slow tier when
 * it is cheap and RAM holds few carries; RAM alone when the slow tier is
 * dear; a clear error when neither holds a schedule. */
static void test_adjoint_for_tiers(void **state)
{
    (void)state;
    remat_schedule_spec spec;
    /* 100 steps, carries of 1000 bytes, tapes of 100: store-all needs 10000 */
    assert_int_equal(remat_schedule_for_tiers(10000, 1 << 20, 100, 1000, 100, 0.1, 0.1, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_STORE_ALL);
    /* RAM for 3 carries and a tape, disk for 1000 carries, cheap: two-tier */
    assert_int_equal(remat_schedule_for_tiers(3100, 1000000, 100, 1000, 100, 0.1, 0.1, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_TWO_TIER);
    assert_int_equal(spec.snapshots, 3);
    assert_int_equal(spec.disk_snapshots, 99);
    remat_schedule_cost c;
    assert_int_equal(remat_schedule_predict(&spec, 100, &c), REMAT_OK);
    assert_true((double)c.forward_evals + 0.1 * (double)(c.disk_writes + c.disk_reads) <
                (double)remat_binomial_optimum(100, 3));
    assert_true(c.peak_snapshots * 1000 + c.peak_tapes * 100 <= 3100);
    assert_true(c.peak_disk_snapshots * 1000 <= 1000000);
    /* the same with a dear disk: RAM alone (binomial) */
    assert_int_equal(remat_schedule_for_tiers(3100, 1000000, 100, 1000, 100, 1000, 1000, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_BINOMIAL);
    /* no room in RAM for a carry beside the tape: all on disk */
    assert_int_equal(remat_schedule_for_tiers(100, 1000000, 100, 1000, 100, 0.1, 0.1, &spec), REMAT_OK);
    assert_int_equal(spec.kind, REMAT_SCHED_TWO_TIER);
    assert_int_equal(spec.snapshots, 0);
    /* neither: RAM below one tape and carry, disk below one carry */
    assert_int_equal(remat_schedule_for_tiers(100, 999, 100, 1000, 100, 0.1, 0.1, &spec), REMAT_ERR_BUDGET);
    assert_int_equal(remat_schedule_for_tiers(3100, -1, 100, 1000, 100, 0.1, 0.1, &spec), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "disk budget -1 bytes is negative"));
}

static void test_adjoint_new_rejects_bad_specs(void **state)
{
    (void)state;
    remat_schedule *s = (remat_schedule *)&s;
    remat_schedule_spec bad_k = {.kind = REMAT_SCHED_PERIODIC, .period = 0};
    assert_int_equal(remat_schedule_new(&bad_k, 10, &s), REMAT_ERR_ARG);
    assert_null(s);
    assert_non_null(strstr(remat_last_error(), "periodic:0"));
    remat_schedule_spec bad_s = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 0};
    assert_int_equal(remat_schedule_new(&bad_s, 10, &s), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "binomial:0: snapshots must be >= 1"));
    remat_schedule_spec ok = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 2};
    assert_int_equal(remat_schedule_new(&ok, -1, &s), REMAT_ERR_ARG);
    assert_non_null(strstr(remat_last_error(), "-1"));
    remat_schedule_spec bad_kind = {.kind = REMAT_SCHED_KIND_COUNT};
    assert_int_equal(remat_schedule_new(&bad_kind, 3, &s), REMAT_ERR_ARG);
    assert_int_equal(remat_schedule_new(NULL, 3, &s), REMAT_ERR_NULL);
    assert_int_equal(remat_schedule_new(&ok, 3, NULL), REMAT_ERR_NULL);
    remat_schedule_cost cost;
    assert_int_equal(remat_schedule_predict(&bad_s, 3, &cost), REMAT_ERR_ARG);
    assert_int_equal(remat_schedule_predict(&ok, -2, &cost), REMAT_ERR_ARG);
    remat_schedule_free(NULL); /* no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adjoint_binomial_optimum_vectors),
        cmocka_unit_test(test_adjoint_binomial_formula_matches_recursion),
        cmocka_unit_test(test_adjoint_binomial_grid),
        cmocka_unit_test(test_adjoint_store_all_and_per_step),
        cmocka_unit_test(test_adjoint_periodic),
        cmocka_unit_test(test_adjoint_two_level),
        cmocka_unit_test(test_adjoint_zero_length_every_kind),
        cmocka_unit_test(test_adjoint_online_optimal_up_to_beta2),
        cmocka_unit_test(test_adjoint_online_bound_long),
        cmocka_unit_test(test_adjoint_online_reveal_time_irrelevant),
        cmocka_unit_test(test_adjoint_for_budget_picks_fewest_evals),
        cmocka_unit_test(test_adjoint_for_budget_too_small),
        cmocka_unit_test(test_adjoint_parse_format_round_trip),
        cmocka_unit_test(test_adjoint_parse_errors),
        cmocka_unit_test(test_adjoint_new_rejects_bad_specs),
        cmocka_unit_test(test_adjoint_two_tier_matches_brute_force),
        cmocka_unit_test(test_adjoint_two_tier_longer),
        cmocka_unit_test(test_adjoint_two_tier_text_and_errors),
        cmocka_unit_test(test_adjoint_for_tiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
