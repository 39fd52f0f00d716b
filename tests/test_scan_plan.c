/*
 * test_scan_plan.c — the plan a scan node keeps (scan_replay.h): its ops,
 * replayed by a symbolic executor that tracks which carry index each slot,
 * tape and the current carry hold, do what the schedule says (every
 * snapshot read holds the carry the step needs, every step reversed once,
 * n-1 down to 0, within the store's slots and tapes, the predicted
 * evaluations); and the plan's renaming of slots lines up online's strided
 * ops as binomial's are (one kernel call per op in the compiled executor,
 * so ops beyond the evaluations are the overhead bench_scan's floor_ratio
 * measures).
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#include "scan/scan_replay.h"

/* ---- a plan for a spec and a length, with the store a node would size ---- */

typedef struct {
    void *blocks[4];
    int n;
} arena;

static void *arena_alloc(void *ctx, size_t bytes)
{
    arena *a = ctx;
    assert_true(a->n < 4);
    return a->blocks[a->n++] = malloc(bytes);
}

static void arena_free(arena *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->blocks[i]);
}

typedef struct {
    remat_scan_data d;
    scan_plan plan;
    remat_schedule_cost cost;
    arena mem;
} plan_case;

static void plan_ok(plan_case *c, const char *spec, int64_t length)
{
    *c = (plan_case){.d = {.length = length}};
    assert_ok(remat_schedule_parse(spec, &c->d.sched));
    remat_schedule *s = NULL;
    assert_ok(remat_schedule_new(&c->d.sched, length, &s));
    c->d.max_slots = remat_schedule_max_slots(s);
    remat_schedule_free(s);
    assert_ok(remat_schedule_predict(&c->d.sched, length, &c->cost));
    c->d.peak_tapes = c->cost.peak_tapes;
    assert_ok(rmi_scan_plan_build(&c->d, &c->plan, 0, arena_alloc, &c->mem));
    assert_true(c->plan.kept);
}

static int64_t plan_ops(const plan_case *c) { return c->plan.n_ops[0] + c->plan.n_ops[1]; }

/* ---- the symbolic executor ---- */

typedef struct {
    const char *what;
    int64_t n, max_slots, max_tapes;
    int64_t cur;            /* the carry index the current carry holds; -1 undefined */
    int64_t expect;         /* the next step to reverse */
    int64_t *slot, *tape;   /* the carry index each slot holds, the step each tape is of */
    int64_t evals;
} sym;

#define SYM_CHECK(S, cond)                                                                                     \
    do {                                                                                                       \
        if (!(cond))                                                                                           \
            fail_msg("%s: %s", (S)->what, #cond);                                                              \
    } while (0)

static void sym_advance(void *x, int64_t step, int64_t n)
{
    sym *S = x;
    SYM_CHECK(S, S->cur == step && n >= 1 && step + n <= S->n);
    S->cur += n, S->evals += n;
}

static void sym_snapshot(void *x, int slot)
{
    sym *S = x;
    SYM_CHECK(S, slot >= 0 && slot < S->max_slots && S->cur >= 0);
    S->slot[slot] = S->cur;
}

static void sym_restore(void *x, int slot)
{
    sym *S = x;
    SYM_CHECK(S, slot >= 0 && slot < S->max_slots && S->slot[slot] >= 0);
    S->cur = S->slot[slot];
}

static void sym_shot_advance(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    sym *S = x;
    for (int64_t q = 0; q < n; q++) {
        const int64_t k = slot + q * dslot;
        SYM_CHECK(S, k >= 0 && k < S->max_slots && S->cur == step + q && step + q < S->n);
        S->slot[k] = S->cur++;
        S->evals++;
    }
}

static void sym_tape(void *x, int64_t step, int64_t n, int64_t tape)
{
    sym *S = x;
    for (int64_t q = 0; q < n; q++) {
        SYM_CHECK(S, tape + q >= 0 && tape + q < S->max_tapes && S->cur == step + q && step + q < S->n);
        S->tape[tape + q] = S->cur++;
        S->evals++;
    }
}

static void sym_reverse(void *x, int64_t step, int64_t n, int64_t tape)
{
    sym *S = x;
    for (int64_t q = 0; q < n; q++) {
        SYM_CHECK(S, step - q == S->expect && tape - q >= 0 && S->tape[tape - q] == step - q);
        S->tape[tape - q] = -1;
        S->expect--;
    }
}

static void sym_recompute(void *x, int64_t step, int64_t n, int slot, int dslot)
{
    sym *S = x;
    for (int64_t q = 0; q < n; q++) {
        const int64_t k = slot + q * dslot;
        if (slot < 0)
            SYM_CHECK(S, n == 1 && S->cur == step);
        else
            SYM_CHECK(S, k >= 0 && k < S->max_slots && S->slot[k] == step - q);
        SYM_CHECK(S, step - q == S->expect);
        S->expect--, S->evals++;
    }
    S->cur = -1;
}

static const scan_executor symbolic = {
    .advance = sym_advance, .snapshot = sym_snapshot, .restore = sym_restore, .shot_advance = sym_shot_advance,
    .tape = sym_tape, .reverse = sym_reverse, .recompute = sym_recompute,
};

/* Both phases of the plan, the reverse starting with no current carry (the
 * backward node does not have the forward's). */
static void sym_run(const plan_case *c, const char *what)
{
    const int64_t n = c->d.length;
    sym S = {.what = what, .n = n, .max_slots = c->d.max_slots, .max_tapes = c->d.peak_tapes, .expect = n - 1};
    S.slot = malloc(sizeof *S.slot * (size_t)(S.max_slots + 1));
    S.tape = malloc(sizeof *S.tape * (size_t)(S.max_tapes + 1));
    for (int64_t k = 0; k < S.max_slots; k++)
        S.slot[k] = -1;
    for (int64_t k = 0; k < S.max_tapes; k++)
        S.tape[k] = -1;
    scan_walk(&symbolic, &S, c->plan.ops[0], c->plan.n_ops[0]);
    SYM_CHECK(&S, S.cur == n || n == 0);
    S.cur = -1;
    scan_walk(&symbolic, &S, c->plan.ops[1], c->plan.n_ops[1]);
    SYM_CHECK(&S, S.expect == -1);
    if (S.evals != c->cost.forward_evals)
        fail_msg("%s: %lld evaluations, predicted %lld", what, (long long)S.evals, (long long)c->cost.forward_evals);
    free(S.slot);
    free(S.tape);
}

/* ---- cases ---- */

static const char *const specs[] = {"store-all", "per-step", "periodic:1", "periodic:3", "periodic:32", "two-level",
                                    "two-level:7", "binomial:1", "binomial:2", "binomial:3", "binomial:10", "binomial:16",
                                    "online:1", "online:2", "online:3", "online:10", "online:16"};
static const int64_t lengths[] = {0, 1, 2, 3, 5, 11, 37, 100, 281, 1000, 4321};

static void test_scan_plan_ops_replay_the_schedule(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (size_t j = 0; j < sizeof lengths / sizeof *lengths; j++) {
            plan_case c;
            char what[64];
            snprintf(what, sizeof what, "%s over %lld steps", specs[i], (long long)lengths[j]);
            plan_ok(&c, specs[i], lengths[j]);
            sym_run(&c, what);
            if (getenv("SCAN_PLAN_PRINT"))
                printf("%-12s %6lld: %lld + %lld ops\n", specs[i], (long long)lengths[j], (long long)c.plan.n_ops[0],
                       (long long)c.plan.n_ops[1]);
            arena_free(&c.mem);
        }
}

/* Online reaches binomial's evaluations (or a few more) with its kept
 * carries where binomial's are, but its slots come in the order its forward
 * phase freed them; renamed, its strided ops line up as binomial's do:
 * no more ops than binomial over the same length (before the renaming,
 * online:10 over 1000 steps had 2009 ops to binomial:10's 1682). */
static void test_scan_plan_online_ops_as_binomial(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {{"online:10", "binomial:10"}, {"online:16", "binomial:16"}};
    static const int64_t at[] = {100, 281, 1000, 4321};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        for (size_t j = 0; j < sizeof at / sizeof *at; j++) {
            plan_case on, bi;
            plan_ok(&on, pairs[i][0], at[j]);
            plan_ok(&bi, pairs[i][1], at[j]);
            if (plan_ops(&on) > plan_ops(&bi))
                fail_msg("%s over %lld steps: %lld ops, %s %lld", pairs[i][0], (long long)at[j],
                         (long long)plan_ops(&on), pairs[i][1], (long long)plan_ops(&bi));
            arena_free(&on.mem);
            arena_free(&bi.mem);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_plan_ops_replay_the_schedule),
        cmocka_unit_test(test_scan_plan_online_ops_as_binomial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
