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

#include "remat/schedule.h"

/* ---- simulated runtime ---------------------------------------------------- */

typedef struct {
    int64_t evals, peak_snapshots, peak_tapes, actions;
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
    int64_t live_slots = 0, live_tapes = 0;
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
            if (++live_slots > m.peak_snapshots)
                m.peak_snapshots = live_slots;
            break;
        case REMAT_ACT_RESTORE:
            assert_true(a.slot >= 0 && a.slot < max_slots);
            assert_int_equal(slot[a.slot], a.step);
            c = a.step;
            break;
        case REMAT_ACT_FREE:
            assert_true(a.slot >= 0 && a.slot < max_slots);
            assert_int_equal(slot[a.slot], a.step);
            slot[a.slot] = -1;
            live_slots--;
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
